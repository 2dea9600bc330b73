// Fault actions and targets through the real kvcheck binary: the F5 `change` and F6/F10 `action`,
// what F10 reaches under a captured graph, hottest and counted scheduled firings, the F2 `mode`
// (partial, timeout) and F4's latency; eviction causes and the miss reasons the text output lists.
#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_fixtures.hpp"

namespace {

fs::path f2_variant(const nlohmann::json& faults, const std::string& tag) {
    return fault_variant("fault-f2-load-failure.json", faults, tag);
}

}  // namespace

// Proves: "change" and "action" choose what F5, F6 and F10 do. F5 layout changes break VL2 under
// no-layout-check and weights changes do not (the version check catches those); F6 migrating a
// validated block breaks RL3 under no-revalidate; F10 offloading, not migrating, leaves blocks
// registered but not resident for registered-is-resident to read. validated stays clean under
// every action.
TEST(FaultActions, ChangeAndActionChooseTheStep) {
    const auto scenario = [](const std::string& file, const nlohmann::json& fault, const std::string& tag) {
        return fault_variant(file, nlohmann::json::array({fault}), tag);
    };
    const auto violations = [](const nlohmann::json& r, const char* name) {
        return r["invariant_violations"][name].get<int>();
    };
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
    const fs::path migrate6 =
        scenario(f6, {{"fault", "F6"}, {"rate_ppm", 100000}, {"action", "migrate"}}, "f6-migrate");
    const fs::path offload6 =
        scenario(f6, {{"fault", "F6"}, {"rate_ppm", 100000}, {"action", "offload"}}, "f6-offload");
    EXPECT_GT(violations(policy_report(migrate6, "no-revalidate"), "RL3_toctou"), 0);
    check_validated(migrate6, "F6");
    check_validated(offload6, "F6");

    const std::string f10 = "fault-f10-migration-under-graph.json";
    const fs::path offload10 =
        scenario(f10, {{"fault", "F10"}, {"rate_ppm", 1000000}, {"action", "offload"}}, "f10-offload");
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
        for (int ms : {5000, 10000, 20000, 40000})
            list.push_back({{"fault", "F11"}, {"at_ms", ms}, {"count", 5}, {"target", target}});
        return list;
    };
    const std::string file = "fault-f11-lost-block.json";
    const fs::path coldest = fault_variant(file, faults("coldest"), "f11-coldest");
    const fs::path hottest = fault_variant(file, faults("hottest"), "f11-hottest");
    const auto fm1 = [](const nlohmann::json& r) { return r["invariant_violations"]["FM1_segment_whole"].get<int>(); };
    const auto partial = [](const nlohmann::json& r) {
        return r["miss_reasons"].value("compressed_kv", nlohmann::json::object()).value("partial_segment", 0);
    };

    const nlohmann::json cold = policy_report(coldest, "partial-segment-ok");
    EXPECT_EQ(cold["faults_injected"].value("F11", 0), 20);
    EXPECT_EQ(cold["silent_corruptions"].get<int>(), 0);
    EXPECT_EQ(fm1(cold), 0);
    // The default is the coldest: naming it changes nothing.
    const fs::path unnamed = fault_variant(file,
                                           {{{"fault", "F11"}, {"at_ms", 5000}, {"count", 5}},
                                            {{"fault", "F11"}, {"at_ms", 10000}, {"count", 5}},
                                            {{"fault", "F11"}, {"at_ms", 20000}, {"count", 5}},
                                            {{"fault", "F11"}, {"at_ms", 40000}, {"count", 5}}},
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
        const fs::path scenario =
            fault_variant(file, {{{"fault", fault}, {"at_ms", at_ms}, {"count", 5}}}, std::string("count-") + fault);
        const fs::path out = scratch(std::string("count-out-") + fault);
        const Outcome o = kvcheck({"run", scenario.string(), "--quiet", "--out", out.string()});
        ASSERT_EQ(o.code, 0) << o.all();
        const nlohmann::json timeline = read_json(out / "timeline.json");
        std::vector<std::string> targets;
        for (const auto& e : timeline["traceEvents"])
            if (e.value("ph", "") == "i" && e["ts"] == at_ms * 1000.0 &&
                e["name"].get<std::string>().starts_with(fault))
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
    // Apart from the verdict, whose reproduce line names the other file.
    const auto figures = [](nlohmann::json report) {
        report.erase("verdict");
        return report.dump();
    };
    EXPECT_EQ(figures(policy_report(error, "validated")), figures(base));
    const nlohmann::json caught = policy_report(partial, "validated");
    EXPECT_EQ(caught["final_state_hash"], base["final_state_hash"]);
    EXPECT_EQ(caught["faults_injected"]["F2"], base["faults_injected"]["F2"]);
    EXPECT_EQ(caught["load_failures"], base["load_failures"]);
    EXPECT_EQ(caught["silent_corruptions"].get<int>(), 0);

    EXPECT_EQ(policy_report(error, "trust-partial-load")["final_state_hash"], base["final_state_hash"]);
    const nlohmann::json trusted = policy_report(partial, "trust-partial-load");
    EXPECT_GT(trusted["faults_injected"].value("F2", 0), 0);
    EXPECT_LT(trusted["load_failures"].get<int>(), base["load_failures"].get<int>())
        << "partial loads now count as loads";
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

    const nlohmann::json hung =
        report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout");
    EXPECT_GT(hung["faults_injected"].value("F2", 0), 0);
    EXPECT_GT(hung["load_failures"].get<int>(), 0);
    ASSERT_GT(hung["io_wait_ms"]["waits"].get<int>(), 0);
    EXPECT_EQ(hung["io_wait_ms"]["p99"].get<double>(), 250.0) << "the longest waits end at the timeout";
    clean(hung);
    const nlohmann::json by_default =
        report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}}}, "f2-timeout-default");
    EXPECT_EQ(by_default["io_wait_ms"]["p99"].get<double>(), 1000.0);
    clean(by_default);

    const nlohmann::json once =
        report({{{"fault", "F2"}, {"at_ms", 30000}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout-once");
    EXPECT_EQ(once["faults_injected"].value("F2", 0), 1);
    EXPECT_LE(once["load_failures"].get<int>(), 1);
    clean(once);
    // Aimed at request 132, which loads: its load hangs from its start, and its wait lasts the timeout.
    const nlohmann::json aimed = report(
        {{{"fault", "F2"}, {"at_request", 132}, {"mode", "timeout"}, {"timeout_us", 250000}}}, "f2-timeout-aimed");
    EXPECT_EQ(aimed["faults_injected"].value("F2", 0), 1);
    EXPECT_EQ(aimed["load_failures"].get<int>(), 1);
    EXPECT_EQ(aimed["io_wait_ms"]["p99"].get<double>(), 250.0);
    clean(aimed);

    // The last entry that gives a timeout sets it: a later entry without one keeps the 250 ms
    // (it used to put back the 1 s default), so the two pairs below run the same.
    const nlohmann::json one_given =
        report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}},
                {{"fault", "F2"}, {"at_ms", 30000}, {"mode", "timeout"}}},
               "f2-timeout-one-given");
    const nlohmann::json both_given =
        report({{{"fault", "F2"}, {"rate_ppm", 600000}, {"mode", "timeout"}, {"timeout_us", 250000}},
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
    EXPECT_NE(after["final_state_hash"],
              report({{{"fault", "F4"}, {"rate_ppm", 100000}}, once}, "f4-default")["final_state_hash"]);
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
        for (const auto& [form, count] : r["evictions_last_copy"].items())
            EXPECT_LE(count, r["evictions"][form]) << form;
    };
    for (const auto& [file, fault] :
         std::vector<std::pair<std::string, std::string>>{{"fault-f6-evict-before-read.json", "F6"},
                                                          {"fault-f7-tail-boundary-advance.json", "F7"},
                                                          {"fault-f8-swa-expiry.json", "F8"}}) {
        SCOPED_TRACE(file);
        const nlohmann::json r = report(file);
        ASSERT_GT(r["faults_injected"].value(fault, 0), 0);
        std::uint64_t steps = 0;
        for (const auto& [form, count] : r["evictions_by_cause"]["evict_step"].items())
            steps += count.get<std::uint64_t>();
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
        for (const auto& [reason, count] : by_reason.items())
            expected.emplace_back(form + "." + reason, count.get<std::uint64_t>());
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
    for (std::size_t i = 1; i < printed.size(); ++i)
        EXPECT_GE(printed[i - 1].second, printed[i].second) << "most frequent first";
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
        const std::regex row("\nrequests reusing " + range + " % +[0-9]+ +" +
                             std::to_string(count.get<std::uint64_t>()) + "\n");
        EXPECT_TRUE(std::regex_search(cmp.out, row)) << range << " in\n" << cmp.out;
    }
}
