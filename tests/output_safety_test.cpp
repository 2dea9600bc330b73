// Output safety through the real kvcheck binary: a resumed fuzz campaign ends as an uninterrupted
// one (files and reproduce line), merges say what they hold, and reproduce lines run as printed.
// What the commands write and refuse to write is in tests/output_files_test.cpp.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/io/files.hpp"
#include "tests/output_fixtures.hpp"

namespace {

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
    const Cli reproduced = kvcheck(after_binary(again) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    std::smatch first;
    ASSERT_TRUE(std::regex_search(found.output, first, std::regex("walk [0-9]+ violates [A-Za-z0-9_]+")))
        << found.output;
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
        ASSERT_EQ(kvcheck(std::string("fuzz --policy no-pin --seed 9 --walks 300 --keep-going --quiet --shard ") +
                          shard + "/2 --out " + at(std::string("s") + shard))
                      .code,
                  1);
    const Cli merged =
        kvcheck("merge " + at("s0/fuzz.json") + " " + at("s1/fuzz.json") + " --out " + at("merged.json"));
    EXPECT_EQ(merged.code, 1) << merged.output;
    EXPECT_NE(merged.output.find("merged 2 of 2 shards: walks=600 "), std::string::npos) << merged.output;
    const nlohmann::json file = nlohmann::json::parse(slurp(at("merged.json")));
    ASSERT_FALSE(file["violations"].empty());
    const nlohmann::json& first = file["violations"][0];
    const std::string listed = "walk " + first["walk"].dump() + " violates " + first["invariant"].get<std::string>();
    EXPECT_NE(merged.output.find(listed), std::string::npos) << merged.output;
    EXPECT_LT(merged.output.find(listed), merged.output.find("\nreproduce: ")) << merged.output;
    const std::string again = reproduce_line(merged.output);
    ASSERT_EQ(after_binary(again).rfind("fuzz ", 0), 0u) << merged.output;
    const Cli reproduced = kvcheck(after_binary(again) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    EXPECT_NE(reproduced.output.find(listed), std::string::npos) << again << "\n" << reproduced.output;
}

// Proves: a merge of a campaign that did not finish (a shard missing, a shard interrupted) exits
// 130, as fuzz does for an interrupted shard, so a CI merge job does not pass on part of the
// walks; the whole clean campaign exits 0.
TEST_F(OutputSafety, MergeOfAnUnfinishedCampaignIsNotClean) {
    for (const char* shard : {"0", "1"})
        ASSERT_EQ(kvcheck(std::string("fuzz --seed 5 --walks 20 --quiet --shard ") + shard + "/2 --out " +
                          at(std::string("s") + shard))
                      .code,
                  0);
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
    const Cli reproduced = kvcheck(after_binary(again) + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    std::smatch first;
    ASSERT_TRUE(std::regex_search(found.output, first, std::regex("walk [0-9]+ violates [A-Za-z0-9_]+")))
        << found.output;
    EXPECT_NE(reproduced.output.find(first[0].str()), std::string::npos) << reproduced.output;
}

// Proves: a run's reproduce line survives a path with a space and a quote in it: the shell runs
// it as printed and gets the same failure.
TEST_F(OutputSafety, RunReproduceLineIsShellQuoted) {
    const fs::path repo = dir_ / "a repo's copy";
    fs::create_directory_symlink(KVCHECK_SOURCE_DIR, repo);
    const std::string scenario = (repo / "scenarios/fault-f6-evict-before-read.json").string();
    const Cli failed =
        shell("cd " + dir_.string() + " && \"$KVCHECK\" run \"" + scenario + "\" --policy no-pin --quiet");
    ASSERT_EQ(failed.code, 1) << failed.output;
    const std::string again = reproduce_line(failed.output);
    // It names the binary as it was started, so the line pastes into that shell as it is.
    ASSERT_EQ(again.rfind(std::string(KVCHECK_BINARY) + " run '", 0), 0u) << again;
    const Cli reproduced = shell("cd " + dir_.string() + " && " + again + " --quiet");
    EXPECT_EQ(reproduced.code, 1) << reproduced.output;
    EXPECT_EQ(reproduce_line(reproduced.output), again);
}

// Proves: --seconds alone bounds a fuzz campaign by time only; the default 1,000 walks do not cap it.
TEST_F(OutputSafety, FuzzSecondsAloneHasNoWalkBound) {
    ASSERT_EQ(kvcheck("fuzz --seconds 0.2 --quiet --out " + at("t")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("t/fuzz.json")))["walk_budget"], 0);
    ASSERT_EQ(kvcheck("fuzz --seconds 0.2 --walks 5 --quiet --out " + at("w")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("w/fuzz.json")))["walks"], 5);
}

// Proves: a campaign killed by SIGKILL (as the OOM killer ends one) loses only the walks since
// its last checkpoint: resumed from the fuzz.json it wrote while walking, it ends with the
// uninterrupted run's fuzz.json and counterexample, byte for byte; a keep-going campaign with
// hundreds of violations and a clean one on two threads alike.
TEST_F(OutputSafety, KilledFuzzResumesFromItsLastCheckpoint) {
    for (const auto& [flags, code] : {std::pair{std::string("--policy naive --keep-going --walks 3000"), 1},
                                      std::pair{std::string("--policy validated --walks 8000 --threads 2"), 0}}) {
        const Cli whole = kvcheck("fuzz " + flags + " --quiet --out " + at("whole"));
        ASSERT_EQ(whole.code, code) << flags << "\n" << whole.output;
        // Killed as soon as its first checkpoint is on disk.
        const Cli killed = shell("\"$KVCHECK\" fuzz " + flags + " --checkpoint-seconds 0.05 --quiet --out " +
                                 at("part") + " >/dev/null & pid=$!; until [ -f " + at("part/fuzz.json") +
                                 " ] || ! kill -0 $pid 2>/dev/null; do sleep 0.01; done; kill -9 $pid; wait $pid");
        ASSERT_EQ(killed.code, 137) << flags << ": not killed mid-campaign\n" << killed.output;
        const nlohmann::json checkpoint = nlohmann::json::parse(slurp(at("part/fuzz.json")));
        EXPECT_TRUE(checkpoint["interrupted"].get<bool>());
        const Cli resumed = kvcheck("fuzz --resume " + at("part/fuzz.json") + " --quiet --out " + at("part"));
        EXPECT_EQ(resumed.code, code) << resumed.output;
        EXPECT_EQ(slurp(at("part/fuzz.json")), slurp(at("whole/fuzz.json"))) << flags;
        EXPECT_EQ(fs::exists(at("part/counterexample.json")), fs::exists(at("whole/counterexample.json")));
        EXPECT_EQ(slurp(at("part/counterexample.json")), slurp(at("whole/counterexample.json"))) << flags;
        fs::remove_all(at("part"));
        fs::remove_all(at("whole"));
    }
}

// Proves: when --out cannot be written (a full disk; here a file-size limit), the campaign still
// prints every finding and its reproduce line, then the write error, and exits 2.
TEST_F(OutputSafety, FindingsArePrintedWhenTheWriteFails) {
    const Cli full =
        shell("trap '' XFSZ; ulimit -f 4; \"$KVCHECK\" fuzz --policy naive --keep-going --walks 200 --out " +
              at("full") + " 2>&1 | cat");
    EXPECT_NE(full.output.find("walks=200 "), std::string::npos) << full.output.substr(0, 400);
    EXPECT_NE(full.output.find("\nreproduce: " + std::string(KVCHECK_BINARY) + " fuzz --policy naive"),
              std::string::npos);
    EXPECT_NE(full.output.find("kvcheck: " + at("full") + "/fuzz.json: write failed"), std::string::npos)
        << full.output.substr(full.output.size() - std::min<std::size_t>(full.output.size(), 400));
    const Cli code =
        shell("trap '' XFSZ; ulimit -f 4; \"$KVCHECK\" fuzz --policy naive --keep-going --walks 200 --quiet --out " +
              at("full") + " >/dev/null 2>&1; echo $?");
    EXPECT_EQ(code.output, "2\n");
}

// Proves: a time budget is the campaign's: resumed without --seconds, a campaign that spent its
// budget walks nothing more; given --seconds again, that is the new total, not a fresh budget.
TEST_F(OutputSafety, FuzzTimeBudgetCarriesAcrossResumes) {
    ASSERT_EQ(kvcheck("fuzz --seconds 0.5 --quiet --out " + at("t")).code, 0);
    const nlohmann::json first = nlohmann::json::parse(slurp(at("t/fuzz.json")));
    EXPECT_EQ(first["seconds_budget"], 0.5);
    EXPECT_GE(first["seconds_spent"].get<double>(), 0.5);
    ASSERT_EQ(kvcheck("fuzz --resume " + at("t/fuzz.json") + " --quiet --out " + at("t")).code, 0);
    const nlohmann::json second = nlohmann::json::parse(slurp(at("t/fuzz.json")));
    EXPECT_EQ(second["walks"], first["walks"]) << "a spent budget walked again";
    EXPECT_EQ(second["seconds_budget"], 0.5);
    EXPECT_LT(second["seconds_spent"].get<double>() - first["seconds_spent"].get<double>(), 0.25);
    ASSERT_EQ(kvcheck("fuzz --resume " + at("t/fuzz.json") + " --seconds 1 --quiet --out " + at("t")).code, 0);
    const nlohmann::json third = nlohmann::json::parse(slurp(at("t/fuzz.json")));
    EXPECT_GT(third["walks"].get<std::uint64_t>(), second["walks"].get<std::uint64_t>());
    EXPECT_EQ(third["seconds_budget"], 1.0);
    EXPECT_LT(third["seconds_spent"].get<double>(), 1.25);
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
    EXPECT_EQ(kvcheck(after_binary(reproduce_line(replay.output))).code, 1);

    // no-lcm escapes the small scope (docs/checker.md).
    const Cli mutants = kvcheck("mutants --scope small --policy no-lcm --max-seconds 60 --quiet");
    EXPECT_EQ(mutants.code, 1) << mutants.output;
    ASSERT_NE(reproduce_line(mutants.output), "") << mutants.output;
    EXPECT_EQ(kvcheck(after_binary(reproduce_line(mutants.output)) + " --quiet").code, 1);

    // compare judges a policy without an expectation strictly, as run does.
    const nlohmann::json requests = nlohmann::json::parse(R"([
        {"at_ms": 0, "input_tokens": 96, "output_tokens": 16, "blocks": [1, 2, 3, 4, 5, 6]},
        {"at_ms": 200, "input_tokens": 112, "output_tokens": 16, "blocks": [1, 2, 3, 4, 5, 6, 7]},
        {"at_ms": 400, "input_tokens": 80, "output_tokens": 8, "blocks": [1, 2, 3, 4, 8]}])");
    const nlohmann::json scenario = {{"model", "toy"},
                                     {"seed", 3},
                                     {"workload", {{"block_size", 16}, {"requests", requests}}},
                                     {"storage", {{"gpu_budget_bytes", 200000}}},
                                     {"faults", {{{"fault", "F6"}, {"rate_ppm", 1000000}}}},
                                     {"expect", {{"validated", {{"silent_corruptions", {{"max", 0}}}}}}}};
    std::ofstream(at("f6.json")) << scenario.dump() << "\n";
    const Cli compare = kvcheck("compare " + at("f6.json") + " --policies naive,validated --quiet");
    EXPECT_EQ(compare.code, 1) << compare.output;
    EXPECT_NE(compare.output.find("FAIL naive: "), std::string::npos) << compare.output;
    EXPECT_EQ(compare.output.find("FAIL validated"), std::string::npos) << compare.output;
    const std::string binary = std::string(KVCHECK_BINARY) + " ";
    EXPECT_EQ(reproduce_line(compare.output), binary + "run " + at("f6.json") + " --policy naive --seed 3")
        << compare.output;
    EXPECT_EQ(kvcheck(reproduce_line(compare.output).substr(binary.size()) + " --quiet").code, 1);
}

}  // namespace

namespace {

// Proves: a run that fails leaves no earlier result saying pass. Refused before it starts (an
// unknown policy, a bad seed, an --out it cannot write) it removes an earlier passing JUnit file
// (but keeps one that records failures, and a file kvcheck did not write); failing halfway
// through its trace it leaves none of the earlier run's files in its --out folder.
TEST_F(OutputSafety, FailedRunsLeaveNoStaleResultThatSaysPass) {
    const std::string toy = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json";
    const std::string junit = at("junit.xml");
    for (const std::string bad : {"--policy nope", "--seed -1", "--out /dev/null/x"}) {
        ASSERT_EQ(kvcheck("run " + toy + " --quiet --out " + at("r") + " --junit " + junit).code, 0);
        ASSERT_TRUE(fs::exists(junit));
        const Cli refused = kvcheck("run " + toy + " --quiet --junit " + junit + " " + bad);
        EXPECT_EQ(refused.code, 2) << bad << "\n" << refused.output;
        EXPECT_FALSE(fs::exists(junit)) << bad << ": the earlier run's passing JUnit file stayed";
    }
    std::ofstream(junit) << "<?xml version=\"1.0\"?>\n<testsuite name=\"kvcheck\" tests=\"1\" failures=\"1\" "
                            "errors=\"0\">\n</testsuite>\n";
    EXPECT_EQ(kvcheck("run " + toy + " --quiet --junit " + junit + " --policy nope").code, 2);
    EXPECT_TRUE(fs::exists(junit)) << "a JUnit file with failures says no pass and stays";
    std::ofstream(junit) << "notes of my own\n";
    EXPECT_EQ(kvcheck("run " + toy + " --quiet --junit " + junit + " --policy nope").code, 2);
    EXPECT_EQ(slurp(junit), "notes of my own\n");

    const std::string trace = at("t.jsonl");
    fs::copy_file(std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl", trace);
    const std::string scenario = at("s.json");
    std::ofstream(scenario)
        << R"({"model": "toy", "workload": {"trace": "t.jsonl", "format": "jsonl", "block_size": 16}})";
    ASSERT_EQ(kvcheck("run " + scenario + " --quiet --out " + at("halfway")).code, 0);
    ASSERT_TRUE(fs::exists(at("halfway/report.json")));
    std::ofstream(trace, std::ios::app) << "{\"timestamp\": \"x\"}\n";
    const Cli broken = kvcheck("run " + scenario + " --quiet --out " + at("halfway"));
    EXPECT_EQ(broken.code, 2) << broken.output;
    EXPECT_TRUE(fs::is_empty(at("halfway"))) << "the earlier run's files stayed beside a failed run";
}

// Proves: while one kvcheck writes into a folder (here this test holds the folder's lock, as a
// running command does), run, compare, fuzz and check refuse it at once, naming the holder, and
// leave nothing there; any other folder, and the same folder once released, are free.
TEST_F(OutputSafety, OneWriterPerOutputFolder) {
    const std::string toy = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json";
    {
        const kvcheck::sim::OutputLock held(at("busy"));
        for (const std::string& command : {"run " + toy, "compare " + toy + " --policies validated,naive",
                                           std::string("fuzz --walks 10"), std::string("check --scope small")}) {
            const Cli refused = kvcheck(command + " --quiet --out " + at("busy"));
            EXPECT_EQ(refused.code, 2) << command << "\n" << refused.output;
            EXPECT_NE(refused.output.find(at("busy") + ": another kvcheck (PID " + std::to_string(::getpid()) +
                                          ") is writing into this folder"),
                      std::string::npos)
                << refused.output;
            EXPECT_FALSE(fs::exists(at("busy"))) << command;
        }
        // The same folder by another spelling is the same folder.
        EXPECT_EQ(kvcheck("run " + toy + " --quiet --out " + at("busy/../busy")).code, 2);
        EXPECT_EQ(kvcheck("run " + toy + " --quiet --out " + at("free")).code, 0);
    }
    EXPECT_EQ(kvcheck("run " + toy + " --quiet --out " + at("busy")).code, 0);
}

// Proves: a temporary file that a killed writer left (NAME.tmp.PID of a process no longer
// running) is removed by the next write of NAME; one of a live process stays, as it is another
// writer's.
TEST_F(OutputSafety, OrphanedTemporaryFilesAreRemoved) {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its PID names no process now
    fs::create_directories(at("r"));
    const std::string orphan = at("r/report.json.tmp." + std::to_string(child));
    const std::string live = at("r/report.json.tmp." + std::to_string(::getpid()));
    std::ofstream(orphan) << "half";
    std::ofstream(live) << "half";
    ASSERT_EQ(
        kvcheck("run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json --quiet --out " + at("r")).code,
        0);
    EXPECT_FALSE(fs::exists(orphan));
    EXPECT_TRUE(fs::exists(live));
}

}  // namespace
