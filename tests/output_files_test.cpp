// What the commands write, through the real kvcheck binary: a folder's results are those of the
// last run into it, output paths are checked and created before the work, inputs are never
// overwritten, and every command takes --version.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/output_fixtures.hpp"

namespace {

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
    // Started by its path, kvcheck names that path in the lines it prints.
    const std::string marker = "continue with: " + std::string(KVCHECK_BINARY) + " ";
    const std::size_t from = stopped.output.find(marker);
    ASSERT_NE(from, std::string::npos) << stopped.output;
    const std::size_t start = from + marker.size();
    const std::string line = stopped.output.substr(start, stopped.output.find('\n', start) - start);
    EXPECT_NE(line.find("--out "), std::string::npos) << line;
    EXPECT_EQ(kvcheck(line + " --quiet").code, 1);
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
    EXPECT_NE(on_file.output.find("not a folder (expected a run folder holding report.json)"), std::string::npos)
        << on_file.output;
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
    for (const char* name : {"one", "two"})
        std::ofstream(at(std::string("suite/") + name + ".json")) << scenario.dump() << "\n";
    const Cli suite = kvcheck("run " + at("suite") + " --quiet --export-schedules " + at("sched") + " --junit " +
                              at("deep/er/junit.xml"));
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
    const nlohmann::json scenario = {
        {"model", "toy"},
        {"workload",
         {{"block_size", 16},
          {"requests", {{{"at_ms", 0}, {"input_tokens", 64}, {"output_tokens", 4}, {"blocks", {1, 2, 3, 4}}}}}}}};
    std::ofstream(at("suite/b\xFFx.json")) << scenario.dump() << "\n";
    const Cli json =
        shell("(\"$KVCHECK\" run " + at("suite") + " --quiet --json --junit " + at("j.xml") + " 2>/dev/null)");
    ASSERT_EQ(json.code, 0) << json.output;
    EXPECT_TRUE(nlohmann::json::parse(json.output)["scenarios"].contains("b\xEF\xBF\xBDx")) << json.output;
    EXPECT_EQ(slurp(at("j.xml")).find('\xFF'), std::string::npos);
    ASSERT_EQ(kvcheck("run " + at("suite/b\xFFx.json") + " --quiet --out " + at("r")).code, 0);
    EXPECT_EQ(nlohmann::json::parse(slurp(at("r/report.json")))["scenario"], "b\xEF\xBF\xBDx");
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
    const std::string trace =
        std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl --format jsonl --block-size 16";
    for (const std::string& args : {std::string("presets"), std::string("policies"), std::string("run --help"),
                                    "trace stats " + trace, "trace stats --json " + trace}) {
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
    for (const std::string& args :
         {"fuzz --walks 100000 --out " + at("dirs"),
          "run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/quickstart.json --out " + at("dirs"),
          "compare " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/quickstart.json --out " + at("dirs")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find("is a directory, expected a file to write"), std::string::npos) << r.output;
        EXPECT_EQ(r.output.find("seed="), std::string::npos) << "refused before the work: " << r.output;
    }
    for (const std::string& args :
         {"fuzz --walks 100000 --out " + at("file/sub"), "check --out " + at("file/sub/deeper"),
          "merge " + std::string(KVCHECK_SOURCE_DIR) + "/tests/bad_input/results/shard-0-of-2.json --out " +
              at("file/m.json")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find("is not a directory, so nothing can be written under it"), std::string::npos)
            << r.output;
    }
    const Cli regress = kvcheck("mutants --scope small --regress " + at("file/sub"));
    EXPECT_EQ(regress.code, 2) << regress.output;
    EXPECT_EQ(regress.output.find("policy"), std::string::npos) << "refused before the table: " << regress.output;

    // report -o never overwrites a report it reads.
    ASSERT_EQ(
        kvcheck("run " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json --quiet --out " + at("r")).code,
        0);
    const std::string before = slurp(at("r/report.json"));
    const Cli onto = kvcheck("report " + at("r") + " -o " + at("r/../r/report.json"));
    EXPECT_EQ(onto.code, 2) << onto.output;
    EXPECT_NE(onto.output.find("a report this page is drawn from"), std::string::npos) << onto.output;
    EXPECT_EQ(slurp(at("r/report.json")), before);
    // Nor the compare manifest its column order comes from.
    ASSERT_EQ(
        kvcheck("compare " + std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json --quiet --out " + at("c"))
            .code,
        0);
    const Cli onto_manifest = kvcheck("report " + at("c") + " -o " + at("c/compare.json"));
    EXPECT_EQ(onto_manifest.code, 2) << onto_manifest.output;
    EXPECT_NE(onto_manifest.output.find("the manifest this page's column order comes from"), std::string::npos)
        << onto_manifest.output;
}

// Proves: no command writes over one of its own inputs, by any path to it: --junit or --out of
// run and compare onto the scenario or its trace, trace convert and synth onto their source.
// Each is refused before the work, and the input is left as it was.
TEST_F(OutputSafety, InputsAreNeverOverwritten) {
    fs::create_directories(at("in"));
    fs::copy_file(std::string(KVCHECK_SOURCE_DIR) + "/traces/synth/toy.jsonl", at("in/report.json"));
    const nlohmann::json scenario = {
        {"model", "toy"},
        {"workload", {{"trace", "report.json"}, {"format", "jsonl"}, {"block_size", 16}, {"limit", 20}}}};
    std::ofstream(at("in/s.json")) << scenario.dump() << "\n";
    const std::string scenario_text = slurp(at("in/s.json"));
    const std::string trace_text = slurp(at("in/report.json"));
    for (const std::string& args :
         {"run " + at("in/s.json") + " --junit " + at("in/../in/s.json"),
          "run " + at("in/s.json") + " --junit " + at("in/report.json"),
          "run " + at("in/s.json") + " --out " + at("in"), "compare " + at("in/s.json") + " --out " + at("in"),
          "trace convert " + at("in/report.json") + " --format jsonl --block-size 16 --out " + at("in/report.json"),
          "trace synth --from " + at("in/report.json") + " --format jsonl --block-size 16 --requests 5 --out " +
              at("in/./report.json")}) {
        const Cli r = kvcheck(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
        EXPECT_NE(r.output.find(", an input of this command; expected another output file"), std::string::npos)
            << args << "\n"
            << r.output;
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
        const Cli r =
            kvcheck("check --scope small --max-states 1000 --quiet --out " + at("a") + " --checkpoint " + clash);
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
    trace += "{\"timestamp\": 99999999, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, -2]}\n";
    std::ofstream(at("late-bad.jsonl")) << trace;
    const nlohmann::json scenario = {
        {"model", "toy"}, {"workload", {{"trace", "late-bad.jsonl"}, {"format", "jsonl"}, {"block_size", 16}}}};
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
    EXPECT_NE(suite.output.find("folder.json: is not a regular file, expected a scenario of the suite"),
              std::string::npos)
        << suite.output;
}

// Proves: --version is a common flag (DESIGN's CLI contract): every command, nested ones too,
// prints the top level's version line and exits 0 without doing its work.
TEST(CommonFlags, EveryCommandTakesVersion) {
    const Cli top = kvcheck("--version");
    ASSERT_EQ(top.code, 0) << top.output;
    ASSERT_EQ(top.output.rfind("kvcheck ", 0), 0u) << top.output;
    // The commit it was built from: 12 hex digits (marked -dirty for edited sources), or unknown outside git.
    EXPECT_TRUE(
        std::regex_search(top.output, std::regex(R"(^kvcheck [0-9.]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n$)")))
        << top.output;
    for (const char* command :
         {"run", "compare", "validate", "check", "fuzz", "merge", "mutants", "report", "presets", "policies", "replay",
          "trace", "trace stats", "trace synth", "trace convert", "bench"}) {
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
    EXPECT_EQ(without_seconds(written),
              without_seconds(nlohmann::json::parse(mutants.output.substr(mutants.output.find('[')))));
    ASSERT_EQ(written.size(), 1u);
    EXPECT_EQ(written[0]["policy"], "no-pin");

    ASSERT_EQ(kvcheck("run " + std::string(KVCHECK_SOURCE_DIR) +
                      "/scenarios/quickstart.json --quiet --export-schedules " + at("s"))
                  .code,
              0);
    const Cli replay = kvcheck("replay " + at("s") + " --limit 3 --json --out " + at("r"));
    ASSERT_EQ(replay.code, 0) << replay.output;
    EXPECT_EQ(nlohmann::json::parse(slurp(at("r/replay.json"))), nlohmann::json::parse(replay.output));

    std::ofstream(at("file")) << "x";
    for (const std::string& command : {"replay " + at("s") + " --out " + at("file"),
                                       "mutants --scope small --out " + at("file"), "bench --out " + at("file")}) {
        const Cli refused = kvcheck(command);
        EXPECT_EQ(refused.code, 2) << command << "\n" << refused.output;
        EXPECT_NE(refused.output.find("expected an output folder"), std::string::npos) << refused.output;
    }
}

}  // namespace

// Proves: the files of one run name one run id (report.json's run_id, metrics.prom's
// kvcheck_run_info, timeline.json's metadata), the same run again gives the same id, and another
// seed another, so files of different runs left side by side are told apart.
TEST_F(OutputSafety, EveryFileOfARunNamesItsRunId) {
    const std::string toy = std::string(KVCHECK_SOURCE_DIR) + "/scenarios/preset-toy.json";
    std::vector<std::string> ids;
    for (const char* seed : {"1", "1", "2"}) {
        const std::string dir = at(std::string("run-") + std::to_string(ids.size()));
        ASSERT_EQ(kvcheck("run " + toy + " --seed " + seed + " --quiet --out " + dir).code, 0);
        const std::string id = nlohmann::json::parse(slurp(dir + "/report.json"))["run_id"].get<std::string>();
        EXPECT_TRUE(std::regex_match(id, std::regex("[0-9a-f]{16}"))) << id;
        EXPECT_NE(slurp(dir + "/metrics.prom").find(",run_id=\"" + id + "\"} 1\n"), std::string::npos) << seed;
        EXPECT_EQ(nlohmann::json::parse(slurp(dir + "/timeline.json"))["metadata"]["run_id"], id) << seed;
        ids.push_back(id);
    }
    EXPECT_EQ(ids[0], ids[1]) << "the same run, the same id";
    EXPECT_NE(ids[0], ids[2]) << "another seed, another run";
}
