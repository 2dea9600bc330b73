// Scenario options beyond the catalogue, through the real kvcheck binary: `run --expected-policies`,
// faults aimed at a request (`at_request`), the F2 `mode`, the F5 `change` and F6/F10 `action`, the shrunk
// counterexample.json a failing run leaves, the miss reasons the text output lists, and what a read of a segment
// evicted before it breaks. Storage tiers are in tests/storage_tiers_scenario_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_fixtures.hpp"

namespace {

// scenarios/FILE with these faults and no expectations, written apart as `tag`.
fs::path fault_variant(const std::string& file, const nlohmann::json& faults, const std::string& tag) {
    const fs::path source = kSourceDir / "scenarios" / file;
    nlohmann::json doc = read_json(source);
    doc.erase("expect");
    doc["faults"] = faults;
    return relocated_copy(source, doc, tag);
}

fs::path f2_variant(const nlohmann::json& faults, const std::string& tag) {
    return fault_variant("fault-f2-load-failure.json", faults, tag);
}

}  // namespace

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
    const Outcome o = kvcheck({"run", copy.string(), "--expected-policies", "--quiet", "--out", out.string(), "--junit", xml.string()});
    ASSERT_EQ(o.code, 1) << o.all();
    EXPECT_NE(o.out.find("FAIL " + name + "[naive]: silent_corruptions = "), std::string::npos) << o.all();
    EXPECT_NE(o.out.find(", expected at most 0\n"), std::string::npos) << o.all();
    EXPECT_NE(o.out.find("reproduce: kvcheck run " + copy.string() + " --policy naive --seed "), std::string::npos) << o.all();
    EXPECT_NE(o.out.find("2 passed, 1 failed"), std::string::npos) << o.all();
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
    const Outcome suite = kvcheck({"run", copy.parent_path().string(), "--expected-policies", "--quiet", "--out", suite_out.string()});
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
                                     {{"requests", {{{"input_tokens", 64}, {"output_tokens", 8}}, {{"at_ms", 1000}, {"input_tokens", 32}, {"output_tokens", 8}}}},
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
    EXPECT_NE(past.err.find("the workload has 6 requests, numbered from 0 (2 listed, 3 sampled answers each)"), std::string::npos) << past.err;
}

// Proves: a scheduled or aimed fault entry that never acted is named in a `fault_unfired`
// warning: F6 aimed at request 400 of a 400-request trace (numbered 0-399), F1 at an event count
// the run never reaches, and F4 armed after the last transfer; the aimed entry at request 40,
// which fires, is not named.
TEST(FaultTargets, EntriesThatNeverFiredAreWarnedOf) {
    const fs::path scenario = fault_variant("fault-f6-evict-before-read.json",
                                            {{{"fault", "F6"}, {"at_request", 40}}, {{"fault", "F6"}, {"at_request", 400}},
                                             {{"fault", "F1"}, {"at_event", 100000000}}, {{"fault", "F4"}, {"at_ms", 99999999}}},
                                            "unfired");
    const nlohmann::json report = policy_report(scenario, "validated");
    EXPECT_EQ(report["faults_injected"].value("F6", 0), 1);
    std::string message;
    for (const auto& w : report["warnings"])
        if (w["code"] == "fault_unfired") message = w["message"];
    EXPECT_TRUE(message.starts_with("3 fault entries never acted: /faults/1 (F6 at_request 400), /faults/2 (F1 at_event 100000000), "
                                    "/faults/3 (F4 at_ms 99999999); "))
        << report["warnings"].dump();
    EXPECT_NE(message.find("(there are 400 requests, numbered from 0)"), std::string::npos) << message;
    const nlohmann::json fired = policy_report(fault_variant("fault-f6-evict-before-read.json", {{{"fault", "F6"}, {"at_request", 40}}}, "fired"),
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
    EXPECT_TRUE(report["warnings"][0]["message"].get<std::string>().starts_with("1 fault entry never acted: /faults/0 (F3 at_request 5);"))
        << report["warnings"];

    const fs::path source = kSourceDir / "scenarios" / "preset-gpt-oss-120b.json";
    nlohmann::json f8 = read_json(source);
    f8.erase("expect");
    f8["workload"] = {{"trace", (kSourceDir / "traces/synth/conversation-small.jsonl").string()}, {"format", "mooncake"}, {"limit", 20}};
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
    const Outcome held = run_with({{"faults_injected.F5", {{"max", 0}}}, {"evictions_by_cause.evict_step.linear_state", {{"min", 0}, {"max", 0}}},
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
    EXPECT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos) << o.all();
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
    const Outcome c = kvcheck({"compare", source.string(), "--policies", "validated,no-pin", "--out", both.string(), "--quiet"});
    ASSERT_EQ(c.code, 1) << c.all();
    EXPECT_EQ(read_text(both / "no-pin" / "counterexample.json"), first);
    EXPECT_FALSE(fs::exists(both / "validated" / "counterexample.json"));

    // A run whose expectation allows its violations and fails only on their count fails no
    // invariant: nothing to shrink, and the earlier counterexample in the folder goes.
    ASSERT_EQ(kvcheck({"run", source.string(), "--policy", "no-pin", "--out", out.string(), "--quiet"}).code, 1);
    ASSERT_TRUE(fs::exists(out / "counterexample.json"));
    const fs::path f10 = kSourceDir / "scenarios" / "fault-f10-migration-under-graph.json";
    const Outcome counted = kvcheck({"run", f10.string(), "--policy", "no-graph-guard", "--seed", "2", "--set", "/faults/0/rate_ppm=500000",
                                     "--out", out.string(), "--quiet"});
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
    const nlohmann::json doc = {{"model", "toy"},
                                {"policy", "naive"},
                                {"workload", {{"trace", (kSourceDir / "traces/synth/toy.jsonl").string()}, {"format", "jsonl"},
                                              {"block_size", 16}, {"limit", 20}}},
                                {"storage", {{"gpu_budget_bytes", 64000000}, {"offload_watermark", 1}, {"disk", {{"failure_ppm", 1000}}}}},
                                {"faults", {{{"fault", "F6"}, {"at_ms", 1000}, {"action", "offload"}}}}};
    const fs::path file = scratch("shrunk-keeps-offload") / "scenario.json";
    write_text(file, doc.dump());
    const fs::path out = scratch("shrunk-keeps-offload-out");
    const Outcome o = kvcheck({"run", file.string(), "--out", out.string(), "--quiet"});
    ASSERT_EQ(o.code, 1) << o.all();
    ASSERT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos) << o.all();
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
    ASSERT_NE(o.out.find("counterexample: " + (out / "counterexample.json").string() + " ("), std::string::npos) << o.all();
    const nlohmann::json doc = read_json(out / "counterexample.json");
    EXPECT_EQ(doc["workload"]["samples"], read_json(source)["workload"]["samples"]);
    const Outcome replay = kvcheck({"run", (out / "counterexample.json").string(), "--json", "--quiet"});
    EXPECT_EQ(replay.code, 1) << replay.all();
    const nlohmann::json report = nlohmann::json::parse(replay.out);
    EXPECT_GT(report["samples_forked"].get<int>(), 0);
    EXPECT_GT(report["invariant_violations"]["OR1_ground_truth"].get<int>(), 0) << replay.all();
}

// Proves: "change" and "action" choose what F5, F6 and F10 do. F5 layout changes break VL2 under
// no-layout-check and weights changes do not (the version check catches those); F6 migrating a
// validated block breaks RL3 under no-revalidate; F10 offloading, not migrating, leaves blocks
// registered but not resident for registered-is-resident to read. validated stays clean under
// every action.
TEST(FaultActions, ChangeAndActionChooseTheStep) {
    const auto scenario = [](const std::string& file, const nlohmann::json& fault, const std::string& tag) {
        return fault_variant(file, nlohmann::json::array({fault}), tag);
    };
    const auto violations = [](const nlohmann::json& r, const char* name) { return r["invariant_violations"][name].get<int>(); };
    const auto check_validated = [&](const fs::path& file, const char* fault) {
        const nlohmann::json r = policy_report(file, "validated");
        EXPECT_GT(r["faults_injected"].value(fault, 0), 0) << file;
        EXPECT_EQ(r["silent_corruptions"].get<int>(), 0) << file;
    };
    const std::string f5 = "fault-f5-version-change.json";
    const fs::path layout = scenario(f5, {{"fault", "F5"}, {"rate_ppm", 20000}, {"change", "layout"}}, "f5-layout");
    const fs::path weights = scenario(f5, {{"fault", "F5"}, {"rate_ppm", 20000}, {"change", "weights"}}, "f5-weights");
    EXPECT_GT(violations(policy_report(layout, "no-layout-check"), "VL2_layout"), 0);
    EXPECT_EQ(violations(policy_report(weights, "no-layout-check"), "VL2_layout"), 0);
    check_validated(layout, "F5");
    check_validated(weights, "F5");

    const std::string f6 = "fault-f6-evict-before-read.json";
    const fs::path migrate6 = scenario(f6, {{"fault", "F6"}, {"rate_ppm", 100000}, {"action", "migrate"}}, "f6-migrate");
    const fs::path offload6 = scenario(f6, {{"fault", "F6"}, {"rate_ppm", 100000}, {"action", "offload"}}, "f6-offload");
    EXPECT_GT(violations(policy_report(migrate6, "no-revalidate"), "RL3_toctou"), 0);
    check_validated(migrate6, "F6");
    check_validated(offload6, "F6");

    const std::string f10 = "fault-f10-migration-under-graph.json";
    const fs::path offload10 = scenario(f10, {{"fault", "F10"}, {"rate_ppm", 1000000}, {"action", "offload"}}, "f10-offload");
    const fs::path migrate10 = scenario(f10, {{"fault", "F10"}, {"rate_ppm", 1000000}}, "f10-migrate");
    EXPECT_GT(violations(policy_report(offload10, "registered-is-resident"), "FM5_resident"), 0);
    EXPECT_EQ(violations(policy_report(migrate10, "registered-is-resident"), "FM5_resident"), 0);
    check_validated(offload10, "F10");
}

// Proves: F10 reaches what a live captured graph references. On gpt-oss-120b (SWA layers whose
// decode slides its window), F10 alone breaks RL4 under no-graph-guard, which keeps RL4 without
// it: a firing after a decode step moves a block the slide let go of under the request's graph.
// validated keeps RL4 under the same firings.
TEST(FaultTargets, F10ReachesWhatACapturedGraphReferences) {
    const std::string preset = "preset-gpt-oss-120b.json";
    const fs::path f10 = fault_variant(preset, {{{"fault", "F10"}, {"rate_ppm", 100000}}}, "f10-reach");
    const fs::path none = fault_variant(preset, nlohmann::json::array(), "f10-reach-none");
    const auto rl4 = [](const nlohmann::json& r) { return r["invariant_violations"]["RL4_graph_topology"].get<int>(); };
    EXPECT_EQ(rl4(policy_report(none, "no-graph-guard")), 0);
    const nlohmann::json broken = policy_report(f10, "no-graph-guard");
    EXPECT_GT(broken["faults_injected"].value("F10", 0), 0);
    EXPECT_GT(rl4(broken), 0);
    EXPECT_EQ(rl4(policy_report(f10, "validated")), 0);
}

// Proves: "target" chooses which segment a scheduled F11 damages. The same twenty firings hit
// the least recently used compressed segments by default, which no later request reads, so
// partial-segment-ok stays clean; with "hottest" they hit the ones just used, which the next turns
// of those conversations resume, so partial-segment-ok reads damaged segments (FM1, OR1) and
// validated recomputes them (partial_segment misses) without corruption.
TEST(FaultTargets, HottestScheduledFiringsDamageWhatIsReadNext) {
    const auto faults = [](const char* target) {
        nlohmann::json list = nlohmann::json::array();
        for (int ms : {5000, 10000, 20000, 40000}) list.push_back({{"fault", "F11"}, {"at_ms", ms}, {"count", 5}, {"target", target}});
        return list;
    };
    const std::string file = "fault-f11-lost-block.json";
    const fs::path coldest = fault_variant(file, faults("coldest"), "f11-coldest");
    const fs::path hottest = fault_variant(file, faults("hottest"), "f11-hottest");
    const auto fm1 = [](const nlohmann::json& r) { return r["invariant_violations"]["FM1_segment_whole"].get<int>(); };
    const auto partial = [](const nlohmann::json& r) { return r["miss_reasons"].value("compressed_kv", nlohmann::json::object()).value("partial_segment", 0); };

    const nlohmann::json cold = policy_report(coldest, "partial-segment-ok");
    EXPECT_EQ(cold["faults_injected"].value("F11", 0), 20);
    EXPECT_EQ(cold["silent_corruptions"].get<int>(), 0);
    EXPECT_EQ(fm1(cold), 0);
    // The default is the coldest: naming it changes nothing.
    const fs::path unnamed = fault_variant(file, {{{"fault", "F11"}, {"at_ms", 5000}, {"count", 5}}, {{"fault", "F11"}, {"at_ms", 10000}, {"count", 5}},
                                                  {{"fault", "F11"}, {"at_ms", 20000}, {"count", 5}}, {{"fault", "F11"}, {"at_ms", 40000}, {"count", 5}}},
                                           "f11-unnamed");
    EXPECT_EQ(policy_report(unnamed, "partial-segment-ok")["final_state_hash"], cold["final_state_hash"]);

    const nlohmann::json hot = policy_report(hottest, "partial-segment-ok");
    EXPECT_EQ(hot["faults_injected"].value("F11", 0), 20);
    EXPECT_GT(hot["silent_corruptions"].get<int>(), 0);
    EXPECT_GT(fm1(hot), 0);
    const nlohmann::json guarded = policy_report(hottest, "validated");
    EXPECT_EQ(guarded["silent_corruptions"].get<int>(), 0);
    EXPECT_EQ(fm1(guarded), 0);
    EXPECT_GT(partial(guarded), 0);
    EXPECT_EQ(partial(policy_report(coldest, "validated")), 0);
}

// Proves: each firing of a scheduled entry with a count picks its own target. F3's skew and F10's
// migration stay enabled on the segment they already hit, and five firings at one moment used to
// damage one segment five times; now the timeline names five different segments for each.
TEST(FaultTargets, ScheduledFiringsWithACountHitDifferentSegments) {
    for (const auto& [file, fault, at_ms] : {std::tuple{"fault-f3-index-version-skew.json", "F3", 10000},
                                             std::tuple{"fault-f10-migration-under-graph.json", "F10", 3000}}) {
        const fs::path scenario = fault_variant(file, {{{"fault", fault}, {"at_ms", at_ms}, {"count", 5}}}, std::string("count-") + fault);
        const fs::path out = scratch(std::string("count-out-") + fault);
        const Outcome o = kvcheck({"run", scenario.string(), "--quiet", "--out", out.string()});
        ASSERT_EQ(o.code, 0) << o.all();
        const nlohmann::json timeline = read_json(out / "timeline.json");
        std::vector<std::string> targets;
        for (const auto& e : timeline["traceEvents"])
            if (e.value("ph", "") == "i" && e["ts"] == at_ms * 1000.0 && e["name"].get<std::string>().starts_with(fault))
                targets.push_back(e["args"]["detail"]);
        ASSERT_EQ(targets.size(), 5u) << fault;
        std::sort(targets.begin(), targets.end());
        EXPECT_EQ(std::unique(targets.begin(), targets.end()), targets.end()) << fault;
        EXPECT_EQ(read_json(out / "report.json")["faults_injected"].value(fault, 0), 5) << fault;
    }
}

// Proves: "mode" chooses how F2 fails a transfer. "error" is the default: naming it changes no
// byte of report.json. Under validated's load-length check a partial load is a failed load, so
// "partial" reaches the same final state with the same F2 firings and load failures; the
// trust-partial-load mutant, clean under errors, takes partial loads as complete and reads bytes
// that are not the ground truth (OR1), while every segment it reads is resident (FM5 holds).
TEST(FaultActions, F2ModePartialCutsLoadsShort) {
    const auto scenario = f2_variant;
    const fs::path plain = scenario({{{"fault", "F2"}, {"rate_ppm", 600000}}}, "f2-plain");
    const fs::path error = scenario({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "error"}}}, "f2-error");
    const fs::path partial = scenario({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "partial"}}}, "f2-partial");
    const nlohmann::json base = policy_report(plain, "validated");
    ASSERT_GT(base["load_failures"].get<int>(), 0);
    EXPECT_EQ(policy_report(error, "validated").dump(), base.dump());
    const nlohmann::json caught = policy_report(partial, "validated");
    EXPECT_EQ(caught["final_state_hash"], base["final_state_hash"]);
    EXPECT_EQ(caught["faults_injected"]["F2"], base["faults_injected"]["F2"]);
    EXPECT_EQ(caught["load_failures"], base["load_failures"]);
    EXPECT_EQ(caught["silent_corruptions"].get<int>(), 0);

    EXPECT_EQ(policy_report(error, "trust-partial-load")["final_state_hash"], base["final_state_hash"]);
    const nlohmann::json trusted = policy_report(partial, "trust-partial-load");
    EXPECT_GT(trusted["faults_injected"].value("F2", 0), 0);
    EXPECT_LT(trusted["load_failures"].get<int>(), base["load_failures"].get<int>()) << "partial loads now count as loads";
    EXPECT_GT(trusted["silent_corruptions"].get<int>(), 0);
    EXPECT_GT(trusted["invariant_violations"].value("OR1_ground_truth", 0), 0);
    EXPECT_EQ(trusted["invariant_violations"].value("FM5_resident", 0), 0);
}

// Proves: F2 "mode": "timeout" hangs a transfer from its start and fails it timeout_us later
// (default 1 s). A request waiting on a hung load waits exactly the timeout, where failing
// transfers of mode "error" end at their usual time (a few ms); validated stays clean. A scheduled
// timeout arms the next transfer to start and fires once.
TEST(FaultActions, F2ModeTimeoutFailsAHungTransferAtItsTimeout) {
    // Tiers of 2 TB/s, so that a transfer that completes, even behind others on its tier's link,
    // ends far sooner than the timeouts below.
    const auto report = [](const nlohmann::json& faults, const std::string& tag) {
        const fs::path source = kSourceDir / "scenarios" / "fault-f2-load-failure.json";
        nlohmann::json doc = read_json(source);
        doc.erase("expect");
        doc["faults"] = faults;
        for (const char* tier : {"host", "disk"}) doc["storage"][tier]["bandwidth_gb_per_s"] = 2000;
        const Outcome o = kvcheck({"run", relocated_copy(source, doc, tag).string(), "--json", "--quiet"});
        EXPECT_EQ(o.code, 0) << o.all();
        return nlohmann::json::parse(o.out);
    };
    const auto clean = [](const nlohmann::json& r) {
        EXPECT_EQ(r["silent_corruptions"].get<int>(), 0);
        for (const auto& [name, count] : r["invariant_violations"].items()) EXPECT_EQ(count.get<int>(), 0) << name;
    };
    const nlohmann::json error = report({{{"fault", "F2"}, {"rate_ppm", 600000}}}, "f2-error-waits");
    ASSERT_GT(error["load_failures"].get<int>(), 0);
    EXPECT_LT(error["io_wait_ms"]["p99"].get<double>(), 50.0);

    const nlohmann::json hung = report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout");
    EXPECT_GT(hung["faults_injected"].value("F2", 0), 0);
    EXPECT_GT(hung["load_failures"].get<int>(), 0);
    ASSERT_GT(hung["io_wait_ms"]["waits"].get<int>(), 0);
    EXPECT_EQ(hung["io_wait_ms"]["p99"].get<double>(), 250.0) << "the longest waits end at the timeout";
    clean(hung);
    const nlohmann::json by_default = report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}}}, "f2-timeout-default");
    EXPECT_EQ(by_default["io_wait_ms"]["p99"].get<double>(), 1000.0);
    clean(by_default);

    const nlohmann::json once = report({{{"fault", "F2"}, {"at_ms", 30000}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout-once");
    EXPECT_EQ(once["faults_injected"].value("F2", 0), 1);
    EXPECT_LE(once["load_failures"].get<int>(), 1);
    clean(once);
    // Aimed at request 132, which loads: its load hangs from its start, and its wait lasts the timeout.
    const nlohmann::json aimed = report({{{"fault", "F2"}, {"at_request", 132}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout-aimed");
    EXPECT_EQ(aimed["faults_injected"].value("F2", 0), 1);
    EXPECT_EQ(aimed["load_failures"].get<int>(), 1);
    EXPECT_EQ(aimed["io_wait_ms"]["p99"].get<double>(), 250.0);
    clean(aimed);

    // The last entry that gives a timeout sets it: a later entry without one keeps the 250 ms
    // (it used to put back the 1 s default), so the two pairs below run the same.
    const nlohmann::json one_given = report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}},
                                             {{"fault", "F2"}, {"at_ms", 30000}, {"mode", "timeout"}}},
                                            "f2-timeout-one-given");
    const nlohmann::json both_given = report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}},
                                              {{"fault", "F2"}, {"at_ms", 30000}, {"mode", "timeout"}, {"timeout_us", 250000}}},
                                             "f2-timeout-both-given");
    EXPECT_EQ(one_given["io_wait_ms"]["p99"].get<double>(), 250.0);
    EXPECT_EQ(one_given["final_state_hash"], both_given["final_state_hash"]);
}

// Proves: F4's extra_latency_us is set by the last entry that gives one, as docs/faults.md says:
// a scheduled F4 entry without it after a rate entry with 300 ms keeps the 300 ms (it used to put
// back the 50 ms default, and the order of the entries decided the delay).
TEST(FaultActions, F4LatencyComesFromTheLastEntryThatGivesOne) {
    const auto report = [](const nlohmann::json& faults, const std::string& tag) {
        return policy_report(fault_variant("fault-f4-late-io.json", faults, tag), "validated");
    };
    const nlohmann::json rate = {{"fault", "F4"}, {"rate_ppm", 100000}, {"extra_latency_us", 300000}};
    const nlohmann::json once = {{"fault", "F4"}, {"at_ms", 1000}};
    nlohmann::json once_given = once;
    once_given["extra_latency_us"] = 300000;
    const nlohmann::json after = report({rate, once}, "f4-after");
    EXPECT_EQ(after["final_state_hash"], report({once, rate}, "f4-before")["final_state_hash"]);
    EXPECT_EQ(after["final_state_hash"], report({rate, once_given}, "f4-both")["final_state_hash"]);
    EXPECT_GT(after["io_wait_ms"]["p50"].get<double>(), 250.0);
    EXPECT_NE(after["final_state_hash"], report({{{"fault", "F4"}, {"rate_ppm", 100000}}, once}, "f4-default")["final_state_hash"]);
}

// Proves: evictions_by_cause splits every eviction by what caused it. Each firing of F6, F7 or F8
// (action evict) is one evict step, so those scenarios' evict_step evictions equal their faults;
// a run without an evicting fault has none; and over the causes every form adds up to `evictions`.
// evictions_last_copy counts those that left no copy: at most `evictions`, fewer where an entry
// kept a disk copy.
TEST(Evictions, EachCauseCountsWhatCausedIt) {
    const auto report = [](const std::string& file) {
        const Outcome o = kvcheck({"run", (kSourceDir / "scenarios" / file).string(), "--json", "--quiet"});
        EXPECT_EQ(o.code, 0) << o.all();
        return nlohmann::json::parse(o.out);
    };
    const auto adds_up = [](const nlohmann::json& r) {
        std::map<std::string, std::uint64_t> total;
        for (const auto& [cause, forms] : r["evictions_by_cause"].items())
            for (const auto& [form, count] : forms.items()) total[form] += count.get<std::uint64_t>();
        EXPECT_EQ(nlohmann::json(total), r["evictions"]);
        for (const auto& [form, count] : r["evictions_last_copy"].items()) EXPECT_LE(count, r["evictions"][form]) << form;
    };
    for (const auto& [file, fault] : std::vector<std::pair<std::string, std::string>>{
             {"fault-f6-evict-before-read.json", "F6"}, {"fault-f7-tail-boundary-advance.json", "F7"}, {"fault-f8-swa-expiry.json", "F8"}}) {
        SCOPED_TRACE(file);
        const nlohmann::json r = report(file);
        ASSERT_GT(r["faults_injected"].value(fault, 0), 0);
        std::uint64_t steps = 0;
        for (const auto& [form, count] : r["evictions_by_cause"]["evict_step"].items()) steps += count.get<std::uint64_t>();
        EXPECT_EQ(steps, r["faults_injected"][fault].get<std::uint64_t>());
        adds_up(r);
    }
    const nlohmann::json quiet = report("fault-f2-load-failure.json");
    EXPECT_FALSE(quiet["evictions_by_cause"].contains("evict_step"));
    EXPECT_GT(quiet["evictions_by_cause"]["admission"].size(), 0u);
    adds_up(quiet);
    // In the quickstart some entries were pinned while their offload finished, so they kept a disk
    // copy, and evicting them later left that copy: fewer last-copy evictions than evictions.
    const nlohmann::json quickstart = report("quickstart.json");
    adds_up(quickstart);
    EXPECT_LT(quickstart["evictions_last_copy"]["compressed_kv"], quickstart["evictions"]["compressed_kv"]);
}

// Proves: the text a run prints lists every miss reason of its report.json with its count, most
// frequent first, and `compare` adds a "miss FORM.REASON" row for every reason any policy
// recorded, with each policy's count (0 where it recorded none: naive never checks), and a
// "requests reusing RANGE %" row for each bucket of requests_by_reuse_pct.
TEST(TextOutput, SummaryAndCompareListTheMissReasons) {
    const std::string source = (kSourceDir / "scenarios" / "quickstart.json").string();
    const Outcome json_run = kvcheck({"run", source, "--json", "--quiet"});
    ASSERT_EQ(json_run.code, 0) << json_run.all();
    const nlohmann::json report = nlohmann::json::parse(json_run.out);
    std::vector<std::pair<std::string, std::uint64_t>> expected;
    for (const auto& [form, by_reason] : report["miss_reasons"].items())
        for (const auto& [reason, count] : by_reason.items()) expected.emplace_back(form + "." + reason, count.get<std::uint64_t>());
    ASSERT_GE(expected.size(), 3u) << "quickstart's faults give validated several miss reasons";

    const Outcome text = kvcheck({"run", source, "--out", scratch("text-summary").string()});
    ASSERT_EQ(text.code, 0) << text.all();
    const std::size_t at = text.out.find("\nmiss_reasons:");
    ASSERT_NE(at, std::string::npos) << text.out;
    std::istringstream line(text.out.substr(at + 14, text.out.find('\n', at + 1) - at - 14));
    std::vector<std::pair<std::string, std::uint64_t>> printed;
    for (std::string item; line >> item;) {
        const std::size_t eq = item.find('=');
        ASSERT_NE(eq, std::string::npos) << item;
        printed.emplace_back(item.substr(0, eq), std::stoull(item.substr(eq + 1)));
    }
    for (std::size_t i = 1; i < printed.size(); ++i) EXPECT_GE(printed[i - 1].second, printed[i].second) << "most frequent first";
    std::sort(printed.begin(), printed.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(printed, expected);

    const Outcome cmp = kvcheck({"compare", source, "--policies", "naive,validated"});
    ASSERT_EQ(cmp.code, 0) << cmp.all();  // quickstart expects naive to corrupt
    for (const auto& [name, count] : expected) {
        const std::regex row("\nmiss " + name + " +0 +" + std::to_string(count) + "\n");
        EXPECT_TRUE(std::regex_search(cmp.out, row)) << name << " in\n" << cmp.out;
    }
    // validated's column of the "requests reusing" rows is its requests_by_reuse_pct.
    ASSERT_EQ(report["requests_by_reuse_pct"].size(), 7u);
    for (const auto& [range, count] : report["requests_by_reuse_pct"].items()) {
        const std::regex row("\nrequests reusing " + range + " % +[0-9]+ +" + std::to_string(count.get<std::uint64_t>()) + "\n");
        EXPECT_TRUE(std::regex_search(cmp.out, row)) << range << " in\n" << cmp.out;
    }
}
