// Output safety through the real kvcheck binary: a resumed fuzz campaign ends as an uninterrupted
// one (files and reproduce line), reproduce lines run as printed, a folder's results are those of
// the last run into it, and output paths are checked and created before the work.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Cli {
    int code = -1;
    std::string output;  // stdout and stderr together
};

// Runs `command` in a shell; KVCHECK stands for the binary.
Cli shell(const std::string& command) {
    Cli r;
    const std::string line = "KVCHECK=" + std::string(KVCHECK_BINARY) + "; " + command + " 2>&1";
    FILE* pipe = ::popen(line.c_str(), "r");
    if (pipe == nullptr) return r;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.output.append(buffer, n);
    const int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

Cli kvcheck(const std::string& args) { return shell("\"$KVCHECK\" " + args); }

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The `reproduce: ...` line of an output, without the prefix.
std::string reproduce_line(const std::string& output) {
    std::smatch m;
    static const std::regex kLine("reproduce: ([^\n]*)");
    return std::regex_search(output, m, kLine) ? m[1].str() : "";
}

class OutputSafety : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() / ("kvcheck_output_" + std::string(info->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string at(const std::string& name) const { return (dir_ / name).string(); }

    // A shard's fuzz.json as a run stopped by a signal would leave it: `from` with the budget of
    // `budget` walks and "interrupted": true.
    void interrupted_copy(const std::string& from, std::uint64_t budget, const std::string& to) const {
        nlohmann::json j = nlohmann::json::parse(slurp(from));
        j["walk_budget"] = budget;
        j["interrupted"] = true;
        fs::create_directories(fs::path(to).parent_path());
        std::ofstream(to) << j.dump(2) << "\n";
    }

    // Resumes `part`'s fuzz.json into folder `name` as if it had been interrupted under a budget
    // of `budget` walks, and expects the files and reproduce line of the run in folder "whole".
    void expect_resume_ends_as_whole(const std::string& part, std::uint64_t budget, const std::string& name, const Cli& whole) const {
        interrupted_copy(at(part + "/fuzz.json"), budget, at(name + "/fuzz.json"));
        const Cli resumed = kvcheck("fuzz --resume " + at(name + "/fuzz.json") + " --out " + at(name) + " --quiet");
        EXPECT_EQ(resumed.code, 1) << resumed.output;
        for (const char* file : {"/fuzz.json", "/counterexample.json", "/counterexample.dot"})
            EXPECT_EQ(slurp(at(name + file)), slurp(at(std::string("whole") + file))) << name << file;
        EXPECT_EQ(reproduce_line(resumed.output), reproduce_line(whole.output)) << name;
    }

    fs::path dir_;
};

// Proves: a stop-at-first campaign interrupted right after it found its violation resumes to the
// uninterrupted run's fuzz.json, counterexample and reproduce line, walking nothing more; one
// interrupted before it continues to the same end.
TEST_F(OutputSafety, StopAtFirstResumesToTheUninterruptedResult) {
    const Cli whole = kvcheck("fuzz --policy no-pin --seed 7 --walks 200 --quiet --out " + at("whole"));
    ASSERT_EQ(whole.code, 1) << whole.output;
    ASSERT_NE(reproduce_line(whole.output), "") << whole.output;

    expect_resume_ends_as_whole("whole", 200, "after", whole);
    ASSERT_EQ(kvcheck("fuzz --policy no-pin --seed 7 --walks 10 --quiet --out " + at("part")).code, 0);
    expect_resume_ends_as_whole("part", 200, "before", whole);
}

// Proves: a keep-going campaign resumed after its first violation still writes that violation's
// counterexample and reproduce line (walked again), not those of a later one.
TEST_F(OutputSafety, KeepGoingResumeKeepsTheFirstCounterexample) {
    const Cli whole = kvcheck("fuzz --policy naive --seed 3 --walks 60 --keep-going --quiet --out " + at("whole"));
    ASSERT_EQ(whole.code, 1) << whole.output;
    ASSERT_EQ(kvcheck("fuzz --policy naive --seed 3 --walks 30 --keep-going --quiet --out " + at("part")).code, 1);
    expect_resume_ends_as_whole("part", 60, "resumed", whole);

    // Every carried violation is walked again on resume: one edited step description is refused.
    nlohmann::json edited = nlohmann::json::parse(slurp(at("part/fuzz.json")));
    ASSERT_GE(edited["violations"].size(), 2u);
    edited["violations"][1]["steps"][0] = "an edited step";
    edited["interrupted"] = true;
    edited["walk_budget"] = 60;
    fs::create_directories(at("edited"));
    std::ofstream(at("edited/fuzz.json")) << edited.dump(2) << "\n";
    const Cli refused = kvcheck("fuzz --resume " + at("edited/fuzz.json") + " --out " + at("edited") + " --quiet");
    EXPECT_EQ(refused.code, 2) << refused.output;
    EXPECT_NE(refused.output.find("/violations/1: walk"), std::string::npos) << refused.output;
}

// Proves: the printed fuzz reproduce line names every flag that shapes the walks (here --depth),
// so that running it finds the same violation.
TEST_F(OutputSafety, FuzzReproduceLineFindsTheSameWalk) {
    const Cli found = kvcheck("fuzz --policy no-pin --seed 7 --walks 5000 --depth 20 --quiet");
    ASSERT_EQ(found.code, 1) << found.output;
    const std::string again = reproduce_line(found.output);
    ASSERT_NE(again.find("--depth 20"), std::string::npos) << again;
    ASSERT_EQ(again.rfind("kvcheck ", 0), 0u) << again;
    const Cli reproduced = kvcheck(again.substr(8) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    std::smatch first;
    ASSERT_TRUE(std::regex_search(found.output, first, std::regex("walk [0-9]+ violates [A-Za-z0-9_]+"))) << found.output;
    EXPECT_NE(reproduced.output.find(first[0].str()), std::string::npos) << reproduced.output;
    // stdout and stderr in one pipe (as `2>&1 | tee log` in CI): the reproduce line is a line of
    // its own, after the listing that stdout buffers.
    const std::size_t line = found.output.find("\nreproduce: ");
    ASSERT_NE(line, std::string::npos) << found.output;
    EXPECT_LT(found.output.find("seed=7 "), line) << found.output;
    EXPECT_LT(found.output.find(first[0].str()), line) << found.output;
}

// Proves: `merge` reports what it merged, on stdout beside --out: the shards, walks and each
// violation, and a reproduce line for the campaign's first violation that finds it again.
TEST_F(OutputSafety, MergeReportsTheViolationsAndHowToReproduceThem) {
    for (const char* shard : {"0", "1"})
        ASSERT_EQ(kvcheck(std::string("fuzz --policy no-pin --seed 9 --walks 300 --keep-going --quiet --shard ") + shard + "/2 --out " +
                          at(std::string("s") + shard))
                      .code,
                  1);
    const Cli merged = kvcheck("merge " + at("s0/fuzz.json") + " " + at("s1/fuzz.json") + " --out " + at("merged.json"));
    EXPECT_EQ(merged.code, 1) << merged.output;
    EXPECT_NE(merged.output.find("merged 2 of 2 shards: walks=600 "), std::string::npos) << merged.output;
    const nlohmann::json file = nlohmann::json::parse(slurp(at("merged.json")));
    ASSERT_FALSE(file["violations"].empty());
    const nlohmann::json& first = file["violations"][0];
    const std::string listed = "walk " + first["walk"].dump() + " violates " + first["invariant"].get<std::string>();
    EXPECT_NE(merged.output.find(listed), std::string::npos) << merged.output;
    EXPECT_LT(merged.output.find(listed), merged.output.find("\nreproduce: ")) << merged.output;
    const std::string again = reproduce_line(merged.output);
    ASSERT_EQ(again.rfind("kvcheck fuzz ", 0), 0u) << merged.output;
    const Cli reproduced = kvcheck(again.substr(8) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    EXPECT_NE(reproduced.output.find(listed), std::string::npos) << again << "\n" << reproduced.output;
}

// Proves: a merge of a campaign that did not finish (a shard missing, a shard interrupted) exits
// 130, as fuzz does for an interrupted shard, so a CI merge job does not pass on part of the
// walks; the whole clean campaign exits 0.
TEST_F(OutputSafety, MergeOfAnUnfinishedCampaignIsNotClean) {
    for (const char* shard : {"0", "1"})
        ASSERT_EQ(kvcheck(std::string("fuzz --seed 5 --walks 20 --quiet --shard ") + shard + "/2 --out " + at(std::string("s") + shard)).code, 0);
    const Cli whole = kvcheck("merge " + at("s0/fuzz.json") + " " + at("s1/fuzz.json") + " --out " + at("whole.json"));
    EXPECT_EQ(whole.code, 0) << whole.output;
    const Cli missing = kvcheck("merge " + at("s0/fuzz.json") + " --out " + at("missing.json"));
    EXPECT_EQ(missing.code, 130) << missing.output;
    EXPECT_NE(missing.output.find("1 of 2 shards merged"), std::string::npos) << missing.output;
    // Shard 1 as a signal after its first five walks (1, 3, 5, 7, 9) would have left it.
    nlohmann::json part = nlohmann::json::parse(slurp(at("s1/fuzz.json")));
    part["interrupted"] = true;
    part["next_walk"] = 11;
    part["walks"] = 5;
    part["steps"] = 5;
    fs::create_directories(at("cut"));
    std::ofstream(at("cut/fuzz.json")) << part.dump(2) << "\n";
    const Cli cut = kvcheck("merge " + at("s0/fuzz.json") + " " + at("cut/fuzz.json") + " --out " + at("cut.json"));
    EXPECT_EQ(cut.code, 130) << cut.output;
    EXPECT_NE(cut.output.find("was interrupted after walk"), std::string::npos) << cut.output;
}

// Proves: a campaign over a preset's swarm scopes prints a reproduce line that names the preset,
// and running that line finds the same walk and invariant.
TEST_F(OutputSafety, FuzzReproduceLineNamesTheModel) {
    const Cli found = kvcheck("fuzz --model gemma3-27b --policy no-swa-expiry --seed 1 --walks 3000 --quiet");
    ASSERT_EQ(found.code, 1) << found.output;
    EXPECT_NE(found.output.find("policy=no-swa-expiry model=gemma3-27b "), std::string::npos) << found.output;
    const std::string again = reproduce_line(found.output);
    ASSERT_NE(again.find(" --model gemma3-27b "), std::string::npos) << again;
    const Cli reproduced = kvcheck(again.substr(8) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    std::smatch first;
    ASSERT_TRUE(std::regex_search(found.output, first, std::regex("walk [0-9]+ violates [A-Za-z0-9_]+"))) << found.output;
    EXPECT_NE(reproduced.output.find(first[0].str()), std::string::npos) << reproduced.output;
}

// Proves: a run's reproduce line survives a path with a space and a quote in it: the shell runs
// it as printed and gets the same failure.
TEST_F(OutputSafety, RunReproduceLineIsShellQuoted) {
    const fs::path repo = dir_ / "a repo's copy";
    fs::create_directory_symlink(KVCHECK_SOURCE_DIR, repo);
    const std::string scenario = (repo / "scenarios/fault-f6-evict-before-read.json").string();
    const Cli failed = shell("cd " + dir_.string() + " && \"$KVCHECK\" run \"" + scenario + "\" --policy no-pin --quiet");
    ASSERT_EQ(failed.code, 1) << failed.output;
    const std::string again = reproduce_line(failed.output);
    ASSERT_EQ(again.rfind("kvcheck run '", 0), 0u) << again;
    const Cli reproduced = shell("cd " + dir_.string() + " && \"$KVCHECK\"" + again.substr(7) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    EXPECT_EQ(reproduce_line(reproduced.output), again);
}

// Proves: a folder's results are those of the last run into it. A clean fuzz or check removes
// the counterexample an earlier one left, a finished check its default checkpoint, a run without
// --html the old report.html, a run or suite an earlier compare's manifest, an export the
// schedules of an earlier one.
TEST_F(OutputSafety, StaleResultsAreRemoved) {
    ASSERT_EQ(kvcheck("fuzz --policy no-pin --seed 7 --walks 200 --quiet --out " + at("f")).code, 1);
    ASSERT_TRUE(fs::exists(at("f/counterexample.json")));
    ASSERT_EQ(kvcheck("fuzz --seed 7 --walks 20 --quiet --out " + at("f")).code, 0);
    EXPECT_FALSE(fs::exists(at("f/counterexample.json")));
    EXPECT_FALSE(fs::exists(at("f/counterexample.dot")));

    ASSERT_EQ(kvcheck("check --scope small --policy no-pin --quiet --out " + at("c")).code, 1);
    ASSERT_TRUE(fs::exists(at("c/counterexample.json")));
    ASSERT_EQ(kvcheck("check --scope small --max-states 1000 --quiet --out " + at("c")).code, 0);
    ASSERT_TRUE(fs::exists(at("c/check.checkpoint")));
    EXPECT_FALSE(fs::exists(at("c/counterexample.json")));
    ASSERT_EQ(kvcheck("check --scope small --quiet --out " + at("c")).code, 0);
    EXPECT_FALSE(fs::exists(at("c/check.checkpoint")));

    // The continue line of a stopped check keeps its --out: run as printed, the counterexample
    // found after the resume lands in the folder and the finished run removes the checkpoint.
    const Cli stopped = kvcheck("check --scope small --policy no-pin --max-states 3000 --quiet --out " + at("k"));
    ASSERT_EQ(stopped.code, 0) << stopped.output;
    std::smatch line;
    ASSERT_TRUE(std::regex_search(stopped.output, line, std::regex("continue with: kvcheck ([^\n]*)"))) << stopped.output;
    EXPECT_NE(line[1].str().find("--out "), std::string::npos) << line[1];
    EXPECT_EQ(kvcheck(line[1].str() + " --quiet").code, 1);
    EXPECT_TRUE(fs::exists(at("k/counterexample.json")));
    EXPECT_FALSE(fs::exists(at("k/check.checkpoint")));

    const std::string toy = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json";
    ASSERT_EQ(kvcheck("run " + toy + " --quiet --html --out " + at("r")).code, 0);
    ASSERT_TRUE(fs::exists(at("r/report.html")));
    ASSERT_EQ(kvcheck("run " + toy + " --quiet --out " + at("r")).code, 0);
    EXPECT_FALSE(fs::exists(at("r/report.html")));
    EXPECT_TRUE(fs::exists(at("r/report.json")));

    // A compare of fewer policies, or a suite, into a used folder leaves only its own results.
    ASSERT_EQ(kvcheck("compare " + toy + " --policies naive,validated,no-pin --quiet --out " + at("cmp")).code, 0);
    ASSERT_EQ(kvcheck("report " + at("cmp")).code, 0);
    ASSERT_TRUE(fs::exists(at("cmp/report.html")));
    ASSERT_EQ(kvcheck("compare " + toy + " --policies validated,naive --quiet --out " + at("cmp")).code, 0);
    EXPECT_FALSE(fs::exists(at("cmp/no-pin")));
    EXPECT_FALSE(fs::exists(at("cmp/report.html")));
    EXPECT_TRUE(fs::exists(at("cmp/naive/report.json")));
    EXPECT_EQ(nlohmann::json::parse(slurp(at("cmp/compare.json")))["policies"], nlohmann::json({"validated", "naive"}));
    // A run into a compare's folder removes the compare's manifest: it describes another run.
    ASSERT_EQ(kvcheck("run " + toy + " --quiet --out " + at("cmp")).code, 0);
    EXPECT_FALSE(fs::exists(at("cmp/compare.json")));
    fs::create_directories(at("suite"));
    fs::copy_file(toy, at("suite/toy.json"));
    std::ofstream(at("junit.xml")) << "<old/>\n";
    const Cli suite = kvcheck("run " + at("suite") + " --quiet --out " + at("r") + " --junit " + at("junit.xml"));
    EXPECT_FALSE(fs::exists(at("r/report.json"))) << suite.output;
    EXPECT_NE(slurp(at("junit.xml")), "<old/>\n");
    // A suite into a compare's folder removes the compare's results and its manifest before it
    // runs (here its copy of the toy scenario cannot find its trace, so nothing replaces them).
    ASSERT_EQ(kvcheck("compare " + toy + " --policies validated --quiet --out " + at("r")).code, 0);
    ASSERT_TRUE(fs::exists(at("r/compare.json")));
    const Cli suite_after_compare = kvcheck("run " + at("suite") + " --quiet --out " + at("r"));
    EXPECT_FALSE(fs::exists(at("r/compare.json"))) << suite_after_compare.output;
    EXPECT_FALSE(fs::exists(at("r/validated")));

    fs::create_directories(at("s"));
    std::ofstream(at("s/request-99999999.json")) << "{}\n";
    std::ofstream(at("s/notes.txt")) << "kept\n";
    ASSERT_EQ(kvcheck("run " + toy + " --quiet --export-schedules " + at("s")).code, 0);
    EXPECT_FALSE(fs::exists(at("s/request-99999999.json")));
    EXPECT_TRUE(fs::exists(at("s/notes.txt"))) << "only schedule files are the export's";
    // A steps-mode scenario exports its own reads' schedules and leaves no earlier export behind.
    std::ofstream(at("s/request-99999999.json")) << "{}\n";
    const std::string steps = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/regress/naive.json";
    ASSERT_EQ(kvcheck("run " + steps + " --quiet --export-schedules " + at("s")).code, 0);
    EXPECT_FALSE(fs::exists(at("s/request-99999999.json")));
    EXPECT_TRUE(fs::exists(at("s/notes.txt")));

    // report on a file (not a run folder) names the input, not the default output under it.
    const Cli on_file = kvcheck("report " + at("cmp/naive/report.json"));
    EXPECT_EQ(on_file.code, 2) << on_file.output;
    EXPECT_NE(on_file.output.find("not a folder (expected a run folder holding report.json)"), std::string::npos) << on_file.output;
}

// Proves: in a suite, each scenario's schedules go to a folder of their own (request ids restart
// in every scenario, so one folder would mix them), and output files get their parent folders.
TEST_F(OutputSafety, SuiteSchedulesAndOutputParents) {
    fs::create_directories(at("suite"));
    nlohmann::json requests = nlohmann::json::array();
    nlohmann::json first = nlohmann::json::array();
    nlohmann::json second = nlohmann::json::array();
    for (int i = 1; i <= 16; ++i) first.push_back(i);
    second = first;
    for (int i = 100; i < 116; ++i) second.push_back(i);
    requests.push_back({{"at_ms", 0}, {"input_tokens", 256}, {"output_tokens", 4}, {"blocks", first}});
    requests.push_back({{"at_ms", 5000}, {"input_tokens", 512}, {"output_tokens", 4}, {"blocks", second}});
    const nlohmann::json scenario = {{"model", "toy"}, {"workload", {{"block_size", 16}, {"requests", requests}}}};
    for (const char* name : {"one", "two"}) std::ofstream(at(std::string("suite/") + name + ".json")) << scenario.dump() << "\n";
    const Cli suite = kvcheck("run " + at("suite") + " --quiet --export-schedules " + at("sched") + " --junit " + at("deep/er/junit.xml"));
    ASSERT_EQ(suite.code, 0) << suite.output;
    EXPECT_TRUE(fs::exists(at("sched/one/request-00000001.json")));
    EXPECT_TRUE(fs::exists(at("sched/two/request-00000001.json")));
    EXPECT_TRUE(fs::exists(at("deep/er/junit.xml")));

    // A scenario gone from the suite takes its schedules with it; other files stay.
    std::ofstream(at("sched/two/notes.txt")) << "kept\n";
    fs::remove(at("suite/two.json"));
    ASSERT_EQ(kvcheck("run " + at("suite") + " --quiet --export-schedules " + at("sched")).code, 0);
    EXPECT_TRUE(fs::exists(at("sched/one/request-00000001.json")));
    EXPECT_FALSE(fs::exists(at("sched/two/request-00000001.json")));
    EXPECT_TRUE(fs::exists(at("sched/two/notes.txt")));

    // A suite's --json is one JSON document on stdout, the summary line on stderr.
    std::ofstream(at("suite/two.json")) << scenario.dump() << "\n";
    const Cli json = shell("(\"$KVCHECK\" run " + at("suite") + " --quiet --json 2>/dev/null)");
    ASSERT_EQ(json.code, 0) << json.output;
    const nlohmann::json doc = nlohmann::json::parse(json.output);
    ASSERT_EQ(doc["scenarios"].size(), 2u) << json.output;
    EXPECT_EQ(doc["scenarios"]["one"]["final_state_hash"], doc["scenarios"]["two"]["final_state_hash"]);
}

// Proves: a scenario file name that is not UTF-8 still gives UTF-8 outputs (report.json, a suite's
// --json, JUnit XML), with U+FFFD for the bad byte.
TEST_F(OutputSafety, FileNamesThatAreNotUtf8GiveUtf8Outputs) {
    fs::create_directories(at("suite"));
    const nlohmann::json scenario = {{"model", "toy"},
                                     {"workload", {{"block_size", 16}, {"requests", {{{"at_ms", 0}, {"input_tokens", 64}, {"output_tokens", 4}, {"blocks", {1, 2, 3, 4}}}}}}}};
    std::ofstream(at("suite/b\xFFx.json")) << scenario.dump() << "\n";
    const Cli json = shell("(\"$KVCHECK\" run " + at("suite") + " --quiet --json --junit " + at("j.xml") + " 2>/dev/null)");
    ASSERT_EQ(json.code, 0) << json.output;
    EXPECT_TRUE(nlohmann::json::parse(json.output)["scenarios"].contains("b\xEF\xBF\xBDx")) << json.output;
    EXPECT_EQ(slurp(at("j.xml")).find('\xFF'), std::string::npos);
    ASSERT_EQ(kvcheck("run " + at("suite/b\xFFx.json") + " --quiet --out " + at("r")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("r/report.json")))["scenario"], "b\xEF\xBF\xBDx");
}

// Proves: --seconds alone bounds a fuzz campaign by time only; the default 1,000 walks do not cap it.
TEST_F(OutputSafety, FuzzSecondsAloneHasNoWalkBound) {
    ASSERT_EQ(kvcheck("fuzz --seconds 0.2 --quiet --out " + at("t")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("t/fuzz.json")))["walk_budget"], 0);
    ASSERT_EQ(kvcheck("fuzz --seconds 0.2 --walks 5 --quiet --out " + at("w")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("w/fuzz.json")))["walks"], 5);
}

// Proves: replay, mutants and compare print the one command that reproduces a failure, and it
// fails the same way when run as printed.
TEST_F(OutputSafety, FailuresPrintTheirReproduceLine) {
    const std::string toy = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json";
    ASSERT_EQ(kvcheck("run " + toy + " --quiet --export-schedules " + at("s")).code, 0);
    nlohmann::json schedule = nlohmann::json::parse(slurp(fs::directory_iterator(at("s"))->path()));
    schedule["oracle"]["corrupt"] = !schedule["oracle"]["corrupt"].get<bool>();
    std::ofstream(at("flipped.json")) << schedule.dump() << "\n";
    const Cli replay = kvcheck("replay " + at("flipped.json"));
    EXPECT_EQ(replay.code, 1) << replay.output;
    ASSERT_NE(reproduce_line(replay.output), "") << replay.output;
    EXPECT_EQ(kvcheck(reproduce_line(replay.output).substr(std::string("kvcheck ").size())).code, 1);

    // no-lcm escapes the small scope (docs/checker.md).
    const Cli mutants = kvcheck("mutants --scope small --policy no-lcm --max-seconds 60 --quiet");
    EXPECT_EQ(mutants.code, 1) << mutants.output;
    ASSERT_NE(reproduce_line(mutants.output), "") << mutants.output;
    EXPECT_EQ(kvcheck(reproduce_line(mutants.output).substr(std::string("kvcheck ").size()) + " --quiet").code, 1);

    // compare judges a policy without an expectation strictly, as run does.
    const nlohmann::json requests = nlohmann::json::parse(R"([
        {"at_ms": 0, "input_tokens": 96, "output_tokens": 16, "blocks": [1, 2, 3, 4, 5, 6]},
        {"at_ms": 200, "input_tokens": 112, "output_tokens": 16, "blocks": [1, 2, 3, 4, 5, 6, 7]},
        {"at_ms": 400, "input_tokens": 80, "output_tokens": 8, "blocks": [1, 2, 3, 4, 8]}])");
    const nlohmann::json scenario = {{"model", "toy"}, {"seed", 3}, {"workload", {{"block_size", 16}, {"requests", requests}}},
                                     {"storage", {{"gpu_budget_bytes", 200000}}},
                                     {"faults", {{{"fault", "F6"}, {"rate_ppm", 1000000}}}},
                                     {"expect", {{"validated", {{"silent_corruptions", {{"max", 0}}}}}}}};
    std::ofstream(at("f6.json")) << scenario.dump() << "\n";
    const Cli compare = kvcheck("compare " + at("f6.json") + " --policies naive,validated --quiet");
    EXPECT_EQ(compare.code, 1) << compare.output;
    EXPECT_NE(compare.output.find("FAIL naive: "), std::string::npos) << compare.output;
    EXPECT_EQ(compare.output.find("FAIL validated"), std::string::npos) << compare.output;
    EXPECT_EQ(reproduce_line(compare.output), "kvcheck run " + at("f6.json") + " --policy naive --seed 3") << compare.output;
    EXPECT_EQ(kvcheck(reproduce_line(compare.output).substr(std::string("kvcheck ").size()) + " --quiet").code, 1);
}

// Proves: a trace written in chunks leaves no temporary file behind when a signal ends the
// process midway (SIGTERM, as a background job's SIGINT is ignored by the shell).
TEST_F(OutputSafety, InterruptedSynthLeavesNoTemporaryFile) {
    const std::string source = std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/conversation-small.jsonl";
    const Cli r = shell("\"$KVCHECK\" trace synth --from " + source + " --requests 50000000 --out " + at("big.jsonl") +
                        " & pid=$!; sleep 0.5; kill -TERM $pid; wait $pid; echo status=$?");
    EXPECT_NE(r.output.find("status=143"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::is_empty(dir_)) << "left behind: " << fs::directory_iterator(dir_)->path();
}

// Proves: a command whose printout cannot be written (a full disk) says so and exits 2, where
// `trace stats`, `presets`, `policies` and `--help` exited 0 having printed nothing.
TEST_F(OutputSafety, StdoutThatCannotBeWrittenExitsTwo) {
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
    const std::string trace = std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl --format jsonl --block-size 16";
    for (const std::string& args : {std::string("presets"), std::string("policies"), std::string("run --help"), "trace stats " + trace, "trace stats --json " + trace}) {
        const Cli r = shell("{ \"$KVCHECK\" " + args + " >/dev/full; }");
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_EQ(r.output, "kvcheck: <stdout>: write failed\n") << args;
    }
}

// Proves: an output path that cannot be written is refused before the work, with exit 2.
TEST_F(OutputSafety, UnwritableOutputIsRefusedFirst) {
    std::ofstream(at("file")) << "x\n";
    // A folder where a result file goes is refused before the work too.
    fs::create_directories(at("dirs/fuzz.json"));
    fs::create_directories(at("dirs/report.json"));
    fs::create_directories(at("dirs/compare.json"));
    for (const std::string& args : {"fuzz --walks 100000 --out " + at("dirs"), "run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/quickstart.json --out " + at("dirs"),
                                    "compare " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/quickstart.json --out " + at("dirs")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find("is a directory, expected a file to write"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("seed="), std::string::npos) << "refused before the work: " << r.output;
    }
    for (const std::string& args : {"fuzz --walks 100000 --out " + at("file/sub"), "check --out " + at("file/sub/deeper"),
                                    "merge " + std::string(KVCHECK_SOURCE_DIR) + "/tests/bad_input/results/shard-0-of-2.json --out " + at("file/m.json")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find("is not a directory, so nothing can be written under it"), std::string::npos) << r.output;
    }
    const Cli regress = kvcheck("mutants --scope small --regress " + at("file/sub"));
    EXPECT_EQ(regress.code, 2) << regress.output;
    EXPECT_EQ(regress.output.find("policy"), std::string::npos) << "refused before the table: " << regress.output;

    // report -o never overwrites a report it reads.
    ASSERT_EQ(kvcheck("run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json --quiet --out " + at("r")).code, 0);
    const std::string before = slurp(at("r/report.json"));
    const Cli onto = kvcheck("report " + at("r") + " -o " + at("r/../r/report.json"));
    EXPECT_EQ(onto.code, 2) << onto.output;
    EXPECT_NE(onto.output.find("a report this page is drawn from"), std::string::npos) << onto.output;
    EXPECT_EQ(slurp(at("r/report.json")), before);
    // Nor the compare manifest its column order comes from.
    ASSERT_EQ(kvcheck("compare " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json --quiet --out " + at("c")).code, 0);
    const Cli onto_manifest = kvcheck("report " + at("c") + " -o " + at("c/compare.json"));
    EXPECT_EQ(onto_manifest.code, 2) << onto_manifest.output;
    EXPECT_NE(onto_manifest.output.find("the manifest this page's column order comes from"), std::string::npos) << onto_manifest.output;
}

// Proves: no command writes over one of its own inputs, by any path to it: --junit or --out of
// run and compare onto the scenario or its trace, trace convert and synth onto their source.
// Each is refused before the work, and the input is left as it was.
TEST_F(OutputSafety, InputsAreNeverOverwritten) {
    fs::create_directories(at("in"));
    fs::copy_file(std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl", at("in/report.json"));
    const nlohmann::json scenario = {{"model", "toy"}, {"workload", {{"trace", "report.json"}, {"format", "jsonl"}, {"block_size", 16}, {"limit", 20}}}};
    std::ofstream(at("in/s.json")) << scenario.dump() << "\n";
    const std::string scenario_text = slurp(at("in/s.json"));
    const std::string trace_text = slurp(at("in/report.json"));
    for (const std::string& args : {"run " + at("in/s.json") + " --junit " + at("in/../in/s.json"), "run " + at("in/s.json") + " --junit " + at("in/report.json"),
                                    "run " + at("in/s.json") + " --out " + at("in"), "compare " + at("in/s.json") + " --out " + at("in"),
                                    "trace convert " + at("in/report.json") + " --format jsonl --block-size 16 --out " + at("in/report.json"),
                                    "trace synth --from " + at("in/report.json") + " --format jsonl --block-size 16 --requests 5 --out " + at("in/./report.json")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find(", an input of this command; expected another output file"), std::string::npos) << args << "\n" << r.output;
        EXPECT_EQ(r.output.find("seed="), std::string::npos) << "refused before the work: " << r.output;
    }
    EXPECT_EQ(slurp(at("in/s.json")), scenario_text);
    EXPECT_EQ(slurp(at("in/report.json")), trace_text);
}

// Proves: `check` refuses, before any work, a --checkpoint that is one of its counterexample
// files (by any path; the file a stopped run writes would be removed as stale at once) or a file
// that is not a checkpoint (a finished run removes its checkpoint file); a real checkpoint there
// is continued as usual.
TEST_F(OutputSafety, CheckNeverWritesOrRemovesAFileThatIsNotItsCheckpoint) {
    for (const std::string& clash : {at("a/counterexample.json"), at("a/../a/counterexample.dot")}) {
        const Cli r = kvcheck("check --scope small --max-states 1000 --quiet --out " + at("a") + " --checkpoint " + clash);
        EXPECT_EQ(r.code, 2) << r.output;
        EXPECT_NE(r.output.find(":--checkpoint: is the run's counterexample."), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("states="), std::string::npos) << "refused before the work: " << r.output;
    }
    std::ofstream(at("notes.txt")) << "my notes\n";
    for (const std::string& args : {"check --scope small --quiet --checkpoint " + at("notes.txt"),
                                    "check --scope small --max-states 1000 --quiet --checkpoint " + at("notes.txt")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << r.output;
        EXPECT_NE(r.output.find("notes.txt: exists and is not a kvcheck checkpoint"), std::string::npos) << r.output;
    }
    EXPECT_EQ(slurp(at("notes.txt")), "my notes\n");
    ASSERT_EQ(kvcheck("check --scope small --max-states 1000 --quiet --checkpoint " + at("cp")).code, 0);
    ASSERT_TRUE(fs::exists(at("cp")));
    EXPECT_EQ(kvcheck("check --scope small --max-states 2000 --quiet --checkpoint " + at("cp")).code, 0);
    EXPECT_EQ(kvcheck("check --resume " + at("cp") + " --quiet").code, 0);
    EXPECT_FALSE(fs::exists(at("cp")));
}

// Proves: a run that fails halfway (a trace line found broken after many good ones) leaves no
// exported schedule behind, though it wrote some before the bad line; and a suite folder's
// `*.json` entry that is no regular file is an error, not a scenario skipped in silence.
TEST_F(OutputSafety, FailedRunsLeaveNoSchedulesAndSuitesSkipNothing) {
    std::string trace = slurp(std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl");
    trace += "{\"timestamp\": 99999999, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
    std::ofstream(at("late-bad.jsonl")) << trace;
    const nlohmann::json scenario = {{"model", "toy"}, {"workload", {{"trace", "late-bad.jsonl"}, {"format", "jsonl"}, {"block_size", 16}}}};
    std::ofstream(at("late-bad.json")) << scenario.dump() << "\n";
    const Cli bad = kvcheck("run " + at("late-bad.json") + " --quiet --export-schedules " + at("sched"));
    EXPECT_EQ(bad.code, 2) << bad.output;
    EXPECT_NE(bad.output.find("late-bad.jsonl:"), std::string::npos) << bad.output;
    EXPECT_TRUE(fs::is_empty(at("sched"))) << "schedules of a run that did not finish";
    // The same trace without its last line exports schedules: the failure above came late.
    trace.erase(trace.rfind("{\"timestamp\": 99999999"));
    std::ofstream(at("late-bad.jsonl")) << trace;
    const Cli good = kvcheck("run " + at("late-bad.json") + " --quiet --export-schedules " + at("sched"));
    EXPECT_EQ(good.code, 0) << good.output;
    EXPECT_FALSE(fs::is_empty(at("sched")));

    fs::create_directories(at("suite/folder.json"));
    std::ofstream(at("suite/one.json")) << scenario.dump() << "\n";
    const Cli suite = kvcheck("run " + at("suite") + " --quiet");
    EXPECT_EQ(suite.code, 2) << suite.output;
    EXPECT_NE(suite.output.find("folder.json: is not a regular file, expected a scenario of the suite"), std::string::npos) << suite.output;
}

}  // namespace

// Proves: --version is a common flag (DESIGN's CLI contract): every command, nested ones too,
// prints the top level's version line and exits 0 without doing its work.
TEST(CommonFlags, EveryCommandTakesVersion) {
    const Cli top = kvcheck("--version");
    ASSERT_EQ(top.code, 0) << top.output;
    ASSERT_EQ(top.output.rfind("kvcheck ", 0), 0u) << top.output;
    for (const char* command : {"run", "compare", "validate", "check", "fuzz", "merge", "mutants", "report", "presets", "policies",
                                "replay", "trace", "trace stats", "trace synth", "trace convert", "bench"}) {
        const Cli c = kvcheck(std::string(command) + " --version");
        EXPECT_EQ(c.code, 0) << command << ": " << c.output;
        EXPECT_EQ(c.output, top.output) << command;
    }
}

// Proves: `--out DIR` of replay and mutants writes the document --json prints (minus the run's
// own timings) to DIR/replay.json and DIR/mutants.json, and a bad --out exits 2 before any work,
// bench included.
TEST_F(OutputSafety, ReplayMutantsAndBenchWriteTheirResultToOut) {
    const auto without_seconds = [](nlohmann::json rows) {
        for (auto& row : rows) row.erase("seconds");
        return rows;
    };
    const Cli mutants = kvcheck("mutants --scope small --policy no-pin --quiet --json --out " + at("m"));
    ASSERT_EQ(mutants.code, 0) << mutants.output;
    const nlohmann::json written = nlohmann::json::parse(slurp(at("m/mutants.json")));
    EXPECT_EQ(without_seconds(written), without_seconds(nlohmann::json::parse(mutants.output.substr(mutants.output.find('[')))));
    ASSERT_EQ(written.size(), 1u);
    EXPECT_EQ(written[0]["policy"], "no-pin");

    ASSERT_EQ(kvcheck("run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/quickstart.json --quiet --export-schedules " + at("s")).code, 0);
    const Cli replay = kvcheck("replay " + at("s") + " --limit 3 --json --out " + at("r"));
    ASSERT_EQ(replay.code, 0) << replay.output;
    EXPECT_EQ(nlohmann::json::parse(slurp(at("r/replay.json"))), nlohmann::json::parse(replay.output));

    std::ofstream(at("file")) << "x";
    for (const std::string& command : {"replay " + at("s") + " --out " + at("file"), "mutants --scope small --out " + at("file"),
                                       "bench --out " + at("file")}) {
        const Cli refused = kvcheck(command);
        EXPECT_EQ(refused.code, 2) << command << "\n" << refused.output;
        EXPECT_NE(refused.output.find("expected an output folder"), std::string::npos) << refused.output;
    }
}
