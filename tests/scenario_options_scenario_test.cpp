// Scenario options beyond the catalogue, through the real kvcheck binary: `run --expected-policies`,
// faults aimed at a request (`at_request`) and the faults that never fired, and the shrunk
// counterexample.json a failing run leaves; suites of chosen scenarios, their summary, JUnit
// against junit-10.xsd and the folders a suite may remove. The fault actions and targets (F2 `mode`, F5 `change`,
// F6/F10 `action`, hottest and counted firings), eviction causes and the miss reasons the text
// output lists are in tests/fault_actions_scenario_test.cpp; storage tiers in
// tests/storage_tiers_scenario_test.cpp.
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_fixtures.hpp"

// Proves: `run --expected-policies` judges every policy the expect block names, not only the
// scenario's own: a naive expectation that cannot hold passes a plain run (exit 0) and fails this
// one (exit 1) with a FAIL line and a reproduce command for that policy, one JUnit case per
// scenario and policy, and each policy's outputs in a subfolder with a manifest in run order.
TEST(ScenarioSuite, ExpectedPoliciesJudgesEveryPolicyTheExpectBlockNames) {
    const fs::path source = kSourceDir / "scenarios" / "fault-f6-evict-before-read.json";
    nlohmann::json doc = read_json(source);
    ASSERT_TRUE(doc["expect"].contains("naive") && doc["expect"].contains("no-revalidate"));
    doc["expect"]["naive"] = {{"silent_corruptions", {{"max", 0}}}};  // naive corrupts under F6
    const fs::path copy = relocated_copy(source, doc, "expected-policies");
    const std::string name = copy.stem().string();
    const Outcome plain = kvcheck({"run", copy.string(), "--quiet"});
    EXPECT_EQ(plain.code, 0) << plain.all();

    const fs::path out = scratch("expected-policies-out");
    const fs::path xml = scratch("expected-policies-junit") / "junit.xml";
    const Outcome o = kvcheck(
        {"run", copy.string(), "--expected-policies", "--quiet", "--out", out.string(), "--junit", xml.string()});
    ASSERT_EQ(o.code, 1) << o.all();
    EXPECT_NE(o.out.find("FAIL " + name + "[naive]: silent_corruptions = "), std::string::npos) << o.all();
    EXPECT_NE(o.out.find(", expected at most 0\n"), std::string::npos) << o.all();
    EXPECT_NE(o.out.find("reproduce: kvcheck run " + copy.string() + " --policy naive --seed "), std::string::npos)
        << o.all();
    EXPECT_NE(o.out.find("summary: 2 passed, 1 failed, 0 errors"), std::string::npos) << o.all();
    EXPECT_NE(o.out.find("FAILED " + name + "[naive] ("), std::string::npos) << o.all();
    const std::string junit = read_text(xml);
    for (const std::string policy : {"validated", "naive", "no-revalidate"}) {
        EXPECT_NE(junit.find("name=\"" + name + "[" + policy + "]\""), std::string::npos) << junit;
        EXPECT_EQ(read_json(out / policy / "report.json")["policy"], policy);
    }
    EXPECT_NE(junit.find("tests=\"3\" failures=\"1\""), std::string::npos) << junit;
    EXPECT_EQ(read_json(out / "compare.json")["policies"], (nlohmann::json{"validated", "naive", "no-revalidate"}));
    EXPECT_FALSE(fs::exists(out / "report.json"));

    // In a folder each scenario gets a folder of its own, laid out the same.
    const fs::path suite_out = scratch("expected-policies-suite");
    const Outcome suite =
        kvcheck({"run", copy.parent_path().string(), "--expected-policies", "--quiet", "--out", suite_out.string()});
    EXPECT_EQ(suite.code, 1) << suite.all();
    EXPECT_EQ(read_json(suite_out / name / "naive" / "report.json")["policy"], "naive");
    EXPECT_EQ(read_json(suite_out / name / "compare.json")["policies"].size(), 3u);

    // A policy of its own cannot be combined with it: that is a plain run.
    const Outcome both = kvcheck({"run", copy.string(), "--expected-policies", "--policy", "naive"});
    EXPECT_EQ(both.code, 2) << both.all();
}

// Proves: a fault with `at_request` fires at that request's opportunity and nowhere else: F6
// aimed at request 40 of the F6 scenario's trace is injected once; validated revalidates and stays
// clean; no-revalidate, which reads nothing wrong without the fault, corrupts request 40's read
// (and those of earlier requests still to read the evicted entry), and names requests as the
// corruption examples do.
TEST(FaultTargets, AtRequestFiresAtThatRequestsOpportunity) {
    const std::string f6 = "fault-f6-evict-before-read.json";
    const fs::path aimed = fault_variant(f6, {{{"fault", "F6"}, {"at_request", 40}}}, "at-request");
    const fs::path none = fault_variant(f6, nlohmann::json::array(), "at-request-none");
    const nlohmann::json validated = policy_report(aimed, "validated");
    EXPECT_EQ(validated["faults_injected"].value("F6", 0), 1) << validated["faults_injected"];
    EXPECT_GE(validated["stale_revalidations"].get<int>(), 1);
    EXPECT_EQ(validated["silent_corruptions"].get<int>(), 0);
    EXPECT_EQ(policy_report(none, "no-revalidate")["silent_corruptions"].get<int>(), 0);
    const nlohmann::json broken = policy_report(aimed, "no-revalidate");
    EXPECT_EQ(broken["faults_injected"].value("F6", 0), 1);
    bool request_40 = false;
    for (const auto& c : broken["corruption_examples"]) request_40 = request_40 || c["request"] == 40;
    EXPECT_TRUE(request_40) << broken["corruption_examples"].dump(2);
    // The first violation message names the first corrupted read's request by the same number
    // (arrival order), not by the model slot it holds: slots of finished requests are reused, so
    // this far into the trace the two differ.
    const std::string first = broken["first_violations"].value("OR1_ground_truth", "");
    const std::string named = "request " + broken["corruption_examples"][0]["request"].dump() + " (slot ";
    EXPECT_EQ(first.rfind(named, 0), 0u) << broken["first_violations"].dump(2);
}

// Proves: a corruption example names where the read went wrong even when every entry it read
// held the right content: under first-group-only-truncate the toy scenario's corruptions are
// reads past the resume point, each named by group, form and range, with a cause that leaves
// the request out (so examples that differ only in the request read alike).
TEST(CorruptionExamples, NameTheEntryOfAReadPastTheResumePoint) {
    const nlohmann::json report = policy_report(kSourceDir / "scenarios/preset-toy.json", "first-group-only-truncate");
    ASSERT_GT(report["silent_corruptions"].get<int>(), 0);
    const nlohmann::json& examples = report["corruption_examples"];
    ASSERT_FALSE(examples.empty());
    for (const nlohmann::json& e : examples) {
        EXPECT_EQ(e["invariant"], "VL3_group_intersection") << e;
        EXPECT_NE(e["group"], "") << e;
        EXPECT_NE(e["form"], "") << e;
        EXPECT_LT(e["start"].get<int>(), e["end"].get<int>()) << e;
        EXPECT_EQ(e["cause"].get<std::string>().find("request "), std::string::npos) << e;
        EXPECT_EQ(e["cause"].get<std::string>().rfind("reads past the common resume point ", 0), 0u) << e;
    }
}

// Proves: `at_request` numbers forked samples like any request. Two listed requests with three
// sampled answers each are requests 0-5: an F10 firing aimed at request 5 (the second request's
// last sample) is taken and fires once, where the loader used to refuse every number past 1;
// request 6 is past the workload and refused with exit 2, the count of listed and sampled named.
TEST(FaultTargets, AtRequestNumbersForkedSamples) {
    const auto scenario = [](int request) {
        const nlohmann::json doc = {{"model", "toy"},
                                    {"workload",
                                     {{"requests",
                                       {{{"input_tokens", 64}, {"output_tokens", 8}},
                                        {{"at_ms", 1000}, {"input_tokens", 32}, {"output_tokens", 8}}}},
                                      {"samples", 3}}},
                                    {"faults", {{{"fault", "F10"}, {"at_request", request}}}}};
        const fs::path file = scratch("at-request-samples-" + std::to_string(request)) / "scenario.json";
        write_text(file, doc.dump());
        return file;
    };
    const nlohmann::json report = policy_report(scenario(5), "validated");
    EXPECT_EQ(report["requests"].get<int>(), 6);
    EXPECT_EQ(report["faults_injected"].value("F10", 0), 1) << report["faults_injected"];
    const Outcome past = kvcheck({"run", scenario(6).string(), "--quiet"});
    EXPECT_EQ(past.code, 2) << past.all();
    EXPECT_NE(past.err.find("/faults/0/at_request: F10"), std::string::npos) << past.err;
    EXPECT_NE(past.err.find("the workload has 6 requests, numbered from 0 (2 listed, 3 sampled answers each)"),
              std::string::npos)
        << past.err;
}

// Proves: a scheduled or aimed fault entry that never acted is named in a `fault_unfired`
// warning: F6 aimed at request 400 of a 400-request trace (numbered 0-399), F1 at an event count
// the run never reaches, and F4 armed after the last transfer; the aimed entry at request 40,
// which fires, is not named.
TEST(FaultTargets, EntriesThatNeverFiredAreWarnedOf) {
    const fs::path scenario = fault_variant("fault-f6-evict-before-read.json",
                                            {{{"fault", "F6"}, {"at_request", 40}},
                                             {{"fault", "F6"}, {"at_request", 400}},
                                             {{"fault", "F1"}, {"at_event", 100000000}},
                                             {{"fault", "F4"}, {"at_ms", 99999999}}},
                                            "unfired");
    const nlohmann::json report = policy_report(scenario, "validated");
    EXPECT_EQ(report["faults_injected"].value("F6", 0), 1);
    std::string message;
    for (const auto& w : report["warnings"])
        if (w["code"] == "fault_unfired") message = w["message"];
    EXPECT_TRUE(message.starts_with(
        "3 fault entries never acted: /faults/1 (F6 at_request 400), /faults/2 (F1 at_event 100000000), "
        "/faults/3 (F4 at_ms 99999999); "))
        << report["warnings"].dump();
    EXPECT_NE(message.find("(there are 400 requests, numbered from 0)"), std::string::npos) << message;
    const nlohmann::json fired = policy_report(
        fault_variant("fault-f6-evict-before-read.json", {{{"fault", "F6"}, {"at_request", 40}}}, "fired"),
        "validated");
    for (const auto& w : fired["warnings"]) EXPECT_NE(w["code"], "fault_unfired") << w.dump();
}

// Proves: an index skew (F3) never lands between a reader's revalidation and its read, and a
// firing that finds nothing to act on leaves its entry unfired. deepseek-v32, no validate gap,
// requests of one 512-token prompt at 0 and 2979 ms: F3 aimed at request 5 comes while request 1
// has revalidated the prompt's only indexer entry and not yet read it. validated stays clean
// (it read the skewed index as validated before: RL3_toctou), and the entry is warned of. So is
// an F8 armed five times by an event count whose opportunities plan no window block it may expire.
TEST(FaultTargets, NoIndexSkewUnderARevalidatedReadAndFiringsWithoutTargetAreUnfired) {
    const nlohmann::json prompt = {{"blocks", {0}}, {"input_tokens", 512}, {"output_tokens", 0}};
    nlohmann::json requests = nlohmann::json::array();
    for (const int at : {0, 2979, 0, 2979, 2979, 0}) {
        nlohmann::json r = prompt;
        r["at_ms"] = at;
        requests.push_back(r);
    }
    const nlohmann::json doc = {{"model", "deepseek-v32"},
                                {"workload", {{"requests", requests}}},
                                {"compute", {{"validate_gap_us", 0}}},
                                {"faults", {{{"fault", "F3"}, {"at_request", 5}}}}};
    const fs::path file = scratch("f3-under-read") / "scenario.json";
    write_text(file, doc.dump());
    const nlohmann::json report = policy_report(file, "validated");
    EXPECT_EQ(report["silent_corruptions"].get<int>(), 0) << report["first_violations"];
    EXPECT_TRUE(report["first_violations"].empty()) << report["first_violations"];
    EXPECT_EQ(report["faults_injected"].value("F3", 0), 0);
    ASSERT_EQ(report["warnings"].size(), 1u) << report["warnings"];
    EXPECT_TRUE(report["warnings"][0]["message"].get<std::string>().starts_with(
        "1 fault entry never acted: /faults/0 (F3 at_request 5);"))
        << report["warnings"];

    const fs::path source = kSourceDir / "scenarios" / "preset-gpt-oss-120b.json";
    nlohmann::json f8 = read_json(source);
    f8.erase("expect");
    f8["workload"] = {{"trace", (kSourceDir / "traces/synth/conversation-small.jsonl").string()},
                      {"format", "mooncake"},
                      {"limit", 20}};
    f8["faults"] = {{{"fault", "F8"}, {"at_event", 10}, {"count", 5}}};
    const fs::path f8_file = scratch("f8-no-target") / "scenario.json";
    write_text(f8_file, f8.dump());
    const nlohmann::json armed = policy_report(f8_file, "validated");
    EXPECT_EQ(armed["faults_injected"].value("F8", 0), 0);
    std::string unfired;
    for (const auto& w : armed["warnings"])
        if (w["code"] == "fault_unfired") unfired = w["message"];
    EXPECT_TRUE(unfired.starts_with("1 fault entry never acted: /faults/0 (F8 at_event 10);")) << armed["warnings"];
}

// Proves: an expectation on a count the run never made (a fault class it never injected, an
// eviction cause it never met) judges it as 0, where "found none" used to fail every bound.
TEST(Expectations, CountsARunNeverMadeAreZero) {
    const auto run_with = [](const nlohmann::json& expect, const std::string& tag) {
        const fs::path source = kSourceDir / "scenarios" / "fault-f6-evict-before-read.json";
        nlohmann::json doc = read_json(source);
        doc["expect"] = {{"validated", expect}};
        return kvcheck({"run", relocated_copy(source, doc, tag).string(), "--quiet"});
    };
    const Outcome held = run_with({{"faults_injected.F5", {{"max", 0}}},
                                   {"evictions_by_cause.evict_step.linear_state", {{"min", 0}, {"max", 0}}},
                                   {"miss_reasons.compressed_kv.rollout", {{"max", 0}}}},
                                  "never-counted");
    EXPECT_EQ(held.code, 0) << held.all();
    const Outcome failed = run_with({{"faults_injected.F5", {{"min", 1}}}}, "never-counted-min");
    EXPECT_EQ(failed.code, 1) << failed.all();
    EXPECT_NE(failed.out.find("faults_injected.F5 = 0, expected at least 1"), std::string::npos) << failed.all();
}

// Proves: a read of a segment that was evicted between validation and read breaks RL3 (and the
// oracle's OR1) and nothing else: when the segment's id has gone to another group's segment by
// the read, its layout and index version are not judged against that other record (no VL2_layout
// or FM4_index_version reports on top of each RL3 one).
TEST(FaultTargets, EvictionBeforeReadBreaksRl3Only) {
    const fs::path source = kSourceDir / "scenarios" / "fault-f6-evict-before-read.json";
    for (const std::string policy : {"no-revalidate", "no-pin"}) {
        const Outcome o = kvcheck({"run", source.string(), "--policy", policy, "--json", "--quiet"});
        ASSERT_TRUE(o.code == 0 || o.code == 1) << o.all();
        const nlohmann::json report = nlohmann::json::parse(o.out);
        std::map<std::string, int> broken;
        for (const auto& [name, count] : report["invariant_violations"].items())
            if (count.get<int>() > 0) broken[name] = count.get<int>();
        ASSERT_GT(broken.count("RL3_toctou"), 0u) << policy << ": " << report["invariant_violations"];
        EXPECT_EQ(broken.size(), 2u) << policy << ": " << report["invariant_violations"];
        EXPECT_EQ(broken.count("OR1_ground_truth"), 1u) << policy;
    }
}

// Proves: a run that fails by violating an invariant leaves DIR/counterexample.json, a scenario
// with the workload shrunk to a few inline requests that still violates it: it loads, replays
// with exit 1 and the same invariant, is the same bytes on a second run, and a later clean run
// into the folder removes it.
TEST(Counterexample, FailedRunIsShrunkToAReplayableScenario) {
    const fs::path source = kSourceDir / "scenarios" / "fault-f6-evict-before-read.json";
    const fs::path out = scratch("shrunk");
    const Outcome o = kvcheck({"run", source.string(), "--policy", "no-pin", "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 1) << o.all();
    EXPECT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos)
        << o.all();
    const std::string first = read_text(out / "counterexample.json");
    const nlohmann::json doc = nlohmann::json::parse(first);
    EXPECT_EQ(doc["policy"], "no-pin");
    EXPECT_FALSE(doc.contains("expect"));
    EXPECT_FALSE(doc["workload"].contains("trace"));
    const std::size_t requests = doc["workload"]["requests"].size();
    EXPECT_GE(requests, 1u);
    EXPECT_LE(requests, 10u) << "the F6 scenario's 400 requests should shrink to a handful";
    const Outcome replay = kvcheck({"run", (out / "counterexample.json").string(), "--json", "--quiet"});
    EXPECT_EQ(replay.code, 1) << replay.all();
    const nlohmann::json report = nlohmann::json::parse(replay.out);
    EXPECT_GT(report["invariant_violations"]["OR1_ground_truth"].get<int>(), 0) << replay.all();
    EXPECT_EQ(report["requests"].get<std::size_t>(), requests);

    ASSERT_EQ(kvcheck({"run", source.string(), "--policy", "no-pin", "--out", out.string(), "--quiet"}).code, 1);
    EXPECT_EQ(read_text(out / "counterexample.json"), first) << "shrinking is deterministic";
    ASSERT_EQ(kvcheck({"run", source.string(), "--out", out.string(), "--quiet"}).code, 0);
    EXPECT_FALSE(fs::exists(out / "counterexample.json")) << "a clean run leaves no counterexample of an earlier one";

    // compare --out: each failing policy's folder gets its own, the same as run writes.
    const fs::path both = scratch("shrunk-compare");
    const Outcome c =
        kvcheck({"compare", source.string(), "--policies", "validated,no-pin", "--out", both.string(), "--quiet"});
    ASSERT_EQ(c.code, 1) << c.all();
    EXPECT_EQ(read_text(both / "no-pin" / "counterexample.json"), first);
    EXPECT_FALSE(fs::exists(both / "validated" / "counterexample.json"));

    // A run whose expectation allows its violations and fails only on their count fails no
    // invariant: nothing to shrink, and the earlier counterexample in the folder goes.
    ASSERT_EQ(kvcheck({"run", source.string(), "--policy", "no-pin", "--out", out.string(), "--quiet"}).code, 1);
    ASSERT_TRUE(fs::exists(out / "counterexample.json"));
    const fs::path f10 = kSourceDir / "scenarios" / "fault-f10-migration-under-graph.json";
    const Outcome counted = kvcheck({"run", f10.string(), "--policy", "no-graph-guard", "--seed", "2", "--set",
                                     "/faults/0/rate_ppm=500000", "--out", out.string(), "--quiet"});
    EXPECT_EQ(counted.code, 1) << counted.all();
    EXPECT_NE(counted.out.find("invariant_violations.RL4_graph_topology = "), std::string::npos) << counted.all();
    EXPECT_EQ(counted.out.find("counterexample:"), std::string::npos) << counted.all();
    EXPECT_FALSE(fs::exists(out / "counterexample.json"));
}

// Proves: the shrinker keeps a fault entry that other settings need in order to load: an F6
// offload is the only source of transfers at offload_watermark 1, so dropping it would leave the
// disk's failure_ppm refused ("a tier failure can never happen here") and the run, which found a
// violation, exiting 2 on its own counterexample. The written file loads and fails again.
TEST(Counterexample, KeepsTheFaultThatOtherSettingsNeedToLoad) {
    const nlohmann::json doc = {
        {"model", "toy"},
        {"policy", "naive"},
        {"workload",
         {{"trace", (kSourceDir / "traces/synth/toy.jsonl").string()},
          {"format", "jsonl"},
          {"block_size", 16},
          {"limit", 20}}},
        {"storage", {{"gpu_budget_bytes", 64000000}, {"offload_watermark", 1}, {"disk", {{"failure_ppm", 1000}}}}},
        {"faults", {{{"fault", "F6"}, {"at_ms", 1000}, {"action", "offload"}}}}};
    const fs::path file = scratch("shrunk-keeps-offload") / "scenario.json";
    write_text(file, doc.dump());
    const fs::path out = scratch("shrunk-keeps-offload-out");
    const Outcome o = kvcheck({"run", file.string(), "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 1) << o.all();
    ASSERT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos)
        << o.all();
    const nlohmann::json shrunk = read_json(out / "counterexample.json");
    ASSERT_EQ(shrunk["faults"].size(), 1u) << shrunk.dump();
    EXPECT_EQ(shrunk["faults"][0]["action"], "offload");
    EXPECT_EQ(kvcheck({"run", (out / "counterexample.json").string(), "--quiet"}).code, 1);
}

// Proves: the counterexample of a run with sampled answers keeps `workload.samples` (and the
// sessions setting), without which the shrunk requests no longer fork and the shrinker's own
// check of the written file used to fail: no counterexample was ever written for such a run.
TEST(Counterexample, SampledAnswersGoWithTheShrunkRequests) {
    const fs::path source = kSourceDir / "scenarios" / "sampling-conversation.json";
    const fs::path out = scratch("shrunk-samples");
    const Outcome o = kvcheck({"run", source.string(), "--policy", "no-revalidate", "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 1) << o.all();
    ASSERT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos)
        << o.all();
    const nlohmann::json doc = read_json(out / "counterexample.json");
    EXPECT_EQ(doc["workload"]["samples"], read_json(source)["workload"]["samples"]);
    const Outcome replay = kvcheck({"run", (out / "counterexample.json").string(), "--json", "--quiet"});
    EXPECT_EQ(replay.code, 1) << replay.all();
    const nlohmann::json report = nlohmann::json::parse(replay.out);
    EXPECT_GT(report["samples_forked"].get<int>(), 0);
    EXPECT_GT(report["invariant_violations"]["OR1_ground_truth"].get<int>(), 0) << replay.all();
}

// The attributes an element may carry in the Jenkins xUnit plugin's junit-10.xsd (the JUnit
// dialect every common CI reader takes), and the pattern of its testsuite time.
namespace {

void expect_junit_10(const std::string& xml) {
    const std::map<std::string, std::set<std::string>> allowed = {
        {"testsuite",
         {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id", "package",
          "file", "log", "url"}},
        {"testcase", {"name", "time", "classname", "group"}},
        {"failure", {"type", "message"}},
        {"error", {"type", "message"}}};
    const std::regex element(R"(<(testsuite|testcase|failure|error)((?:\s+[\w-]+="[^"]*")*)\s*/?>)");
    const std::regex attribute(R"re(([\w-]+)="([^"]*)")re");
    std::size_t seen = 0;
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), element); it != std::sregex_iterator(); ++it) {
        ++seen;
        const std::string name = (*it)[1].str();
        const std::string attributes = (*it)[2].str();
        for (auto a = std::sregex_iterator(attributes.begin(), attributes.end(), attribute);
             a != std::sregex_iterator(); ++a) {
            EXPECT_EQ(allowed.at(name).count((*a)[1].str()), 1u) << "<" << name << "> " << (*a)[1] << " in\n" << xml;
            if ((*a)[1] == "time") {
                EXPECT_TRUE(
                    std::regex_match((*a)[2].str(), std::regex(R"((([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?)")))
                    << (*a)[2];
            }
        }
        if (name == "testsuite" || name == "testcase") {
            EXPECT_NE(attributes.find(" name=\""), std::string::npos) << "name is required on <" << name << ">";
        }
    }
    EXPECT_GT(seen, 1u) << xml;
}

}  // namespace

// Proves: `kvcheck run a.json b.json c.json` runs that list as a suite: JUnit has its three cases
// (valid junit-10), a failure and an error are told apart in the closing summary, which lists the
// failing case with its reproduce line and the error with its message; --json carries the
// errored scenario too; -k chooses by name; two scenarios of one name are refused.
TEST(ScenarioSuite, ChosenScenariosRunAsASuiteWithASummary) {
    const fs::path toy = kSourceDir / "scenarios" / "preset-toy.json";
    nlohmann::json doc = read_json(kSourceDir / "scenarios" / "fault-f1-interrupted-eviction.json");
    doc["expect"] = {{"validated", {{"silent_corruptions", {{"min", 1}}}}}};  // validated never corrupts
    const fs::path failing =
        relocated_copy(kSourceDir / "scenarios" / "fault-f1-interrupted-eviction.json", doc, "suite-failing");
    const fs::path broken = scratch("suite-broken") / "broken.json";
    write_text(
        broken,
        R"({"model": "toy", "workload": {"requests": [{"input_tokens": 16}]}, "storage": {"gpu_budget_gib": -1}})");
    const fs::path xml = scratch("suite-junit") / "junit.xml";
    const Outcome o =
        kvcheck({"run", toy.string(), failing.string(), broken.string(), "--junit", xml.string(), "--quiet", "--json"});
    EXPECT_EQ(o.code, 2) << o.all();
    const std::string junit = read_text(xml);
    std::size_t cases = 0;
    for (std::size_t at = junit.find("<testcase "); at != std::string::npos; at = junit.find("<testcase ", at + 1))
        ++cases;
    EXPECT_EQ(cases, 3u) << junit;
    EXPECT_NE(junit.find("tests=\"3\" failures=\"1\" errors=\"1\""), std::string::npos) << junit;
    expect_junit_10(junit);
    const std::string name = failing.stem().string();
    EXPECT_NE(o.err.find("summary: 1 passed, 1 failed, 1 error in "), std::string::npos) << o.all();
    const std::size_t listed = o.err.find("FAILED " + name + " (");
    ASSERT_NE(listed, std::string::npos) << o.all();
    EXPECT_NE(o.err.find("silent_corruptions = 0, expected at least 1", listed), std::string::npos) << o.all();
    EXPECT_NE(o.err.find("  reproduce: kvcheck run " + failing.string() + " --policy validated --seed ", listed),
              std::string::npos)
        << o.all();
    EXPECT_NE(o.err.find("ERROR broken: " + broken.string() + ":/storage/gpu_budget_gib: "), std::string::npos)
        << o.all();
    const nlohmann::json reports = nlohmann::json::parse(o.out);
    EXPECT_TRUE(reports["scenarios"].contains("preset-toy"));
    EXPECT_TRUE(reports["scenarios"].contains(name));
    EXPECT_NE(reports["errors"]["broken"].get<std::string>().find("gpu_budget_gib"), std::string::npos);
    EXPECT_EQ(reports["summary"]["errors"], 1);
    EXPECT_EQ(reports["summary"]["failed"], 1);

    const Outcome chosen = kvcheck({"run", "scenarios", "-k", "fault-f1*", "-k", "preset-toy", "--quiet"});
    EXPECT_EQ(chosen.code, 0) << chosen.all();
    EXPECT_NE(chosen.out.find("summary: 4 passed, 0 failed, 0 errors"), std::string::npos) << chosen.all();
    for (const char* stem :
         {"fault-f1-interrupted-eviction", "fault-f10-migration-under-graph", "fault-f11-lost-block", "preset-toy"})
        EXPECT_NE(chosen.out.find("scenarios/" + std::string(stem) + ".json"), std::string::npos) << stem;
    EXPECT_EQ(kvcheck({"run", "scenarios", "-k", "no-such-*"}).code, 2);
    const fs::path twin = scratch("suite-twin") / "preset-toy.json";
    fs::copy_file(toy, twin);
    const Outcome twins = kvcheck({"run", toy.string(), twin.string(), "--quiet"});
    EXPECT_EQ(twins.code, 2) << twins.all();
    EXPECT_NE(twins.err.find("has the name \"preset-toy\" of"), std::string::npos) << twins.all();
}

// Proves: a suite run into --out removes only what an earlier suite run into that folder wrote:
// the folder of a scenario the suite no longer has goes, a folder another run made (`run X --out
// DIR/X`) stays, and DIR/suite.json lists what this run wrote.
TEST(ScenarioSuite, SuiteRemovesOnlyFoldersAnEarlierSuiteWrote) {
    const fs::path out = scratch("suite-own-folders");
    const std::string toy = (kSourceDir / "scenarios" / "preset-toy.json").string();
    const std::string f1 = (kSourceDir / "scenarios" / "fault-f1-interrupted-eviction.json").string();
    ASSERT_EQ(kvcheck({"run", toy, "--out", (out / "mine").string(), "--quiet"}).code, 0);
    ASSERT_EQ(kvcheck({"run", toy, f1, "--out", out.string(), "--quiet"}).code, 0);
    EXPECT_TRUE(fs::exists(out / "fault-f1-interrupted-eviction" / "report.json"));
    ASSERT_EQ(kvcheck({"run", toy, "scenarios/preset-qwen3-next.json", "--out", out.string(), "--quiet"}).code, 0);
    EXPECT_FALSE(fs::exists(out / "fault-f1-interrupted-eviction")) << "an earlier suite's folder the suite dropped";
    EXPECT_TRUE(fs::exists(out / "mine" / "report.json")) << "a folder no suite run into " << out << " wrote";
    const nlohmann::json manifest = read_json(out / "suite.json");
    std::vector<std::string> folders;
    for (const auto& c : manifest["cases"]) folders.push_back(c["folder"].get<std::string>());
    EXPECT_EQ(folders, (std::vector<std::string>{"preset-toy", "preset-qwen3-next"}));
    EXPECT_EQ(manifest["passed"], 2);
}
