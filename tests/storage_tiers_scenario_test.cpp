// Storage tiers through the real kvcheck binary: each tier's failures, where a copy rests and
// which tier a transfer runs on, a tier's link moving one transfer at a time, a full tier
// dropping entries, and what a request does about its loads: wait, stop waiting at a cap
// (compute.max_load_wait_us), or fail at a failed load (compute.load_failure_policy).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_fixtures.hpp"

namespace {

// One request's 128-token prefix spills to disk (a 0.001 GB/s link: 16.384 ms a block, eight
// loads in a row); a third request loads it back.
nlohmann::json tier_link_scenario() {
    const auto block = [](std::uint64_t id) { return nlohmann::json(id); };
    return {{"name", "tier-link"},
            {"description", "One request's prefix spills to disk; a later one loads it back through the disk's link."},
            {"model",
             {{"name", "one-group"},
              {"prefill_tokens_per_s", 100000},
              {"groups",
               {{{"name", "kv"},
                 {"kind", "full"},
                 {"layers", 1},
                 {"block_tokens", 16},
                 {"segment_tokens", 16},
                 {"compress_ratio", 1},
                 {"bytes_per_token_layer", 1024},
                 {"layout_id", 1}}}}}},
            {"workload",
             {{"requests",
               {{{"at_ms", 0},
                 {"input_tokens", 128},
                 {"output_tokens", 0},
                 {"block_tokens", 16},
                 {"blocks", {block(1), block(2), block(3), block(4), block(5), block(6), block(7), block(8)}}},
                // Its allocation spills the first request's cold blocks.
                {{"at_ms", 500},
                 {"input_tokens", 32},
                 {"output_tokens", 0},
                 {"block_tokens", 16},
                 {"blocks", {block(101), block(102)}}},
                {{"at_ms", 1000},
                 {"input_tokens", 144},
                 {"output_tokens", 0},
                 {"block_tokens", 16},
                 {"blocks",
                  {block(1), block(2), block(3), block(4), block(5), block(6), block(7), block(8), block(9)}}}}}}},
            {"storage",
             {{"gpu_budget_bytes", 200000},
              {"offload_watermark", 0.05},
              {"host", {{"capacity_bytes", 0}, {"bandwidth_gb_per_s", 20}, {"latency_us", 0}, {"jitter_us", 0}}},
              {"disk",
               {{"capacity_bytes", 1 << 30}, {"bandwidth_gb_per_s", 0.001}, {"latency_us", 0}, {"jitter_us", 0}}}}}};
}

// The report.json of a run of `scenario`, which must pass.
nlohmann::json passing_report(const nlohmann::json& scenario, const std::string& tag) {
    const fs::path file = scratch(tag) / "scenario.json";
    write_text(file, scenario.dump(2));
    const Outcome o = kvcheck({"run", file.string(), "--json", "--quiet"});
    EXPECT_EQ(o.code, 0) << o.all();
    return nlohmann::json::parse(o.out);
}

}  // namespace

// Proves: a tier's failure_ppm fails transfers on that tier, counted as F2: with no host capacity
// every transfer runs on the disk tier, so a disk that always fails fails every offload and
// nothing is ever loaded back; validated stays clean; a failing host tier that is never used
// changes nothing (the same final state as without the key).
TEST(StorageTiers, FailurePpmFailsTransfersOnThatTier) {
    const fs::path source = kSourceDir / "scenarios" / "quickstart.json";
    nlohmann::json doc = read_json(source);
    doc["faults"] = nlohmann::json::array();
    doc.erase("expect");
    doc["storage"]["host"]["capacity_bytes"] = 0;
    const fs::path plain = relocated_copy(source, doc, "tiers-plain");
    doc["storage"]["host"]["failure_ppm"] = 1000000;  // never used: no capacity
    const fs::path unused = relocated_copy(source, doc, "tiers-unused");
    doc["storage"]["disk"]["failure_ppm"] = 1000000;
    const fs::path failing = relocated_copy(source, doc, "tiers-failing");
    const auto report = [](const fs::path& file) {
        const Outcome o = kvcheck({"run", file.string(), "--json", "--quiet"});
        EXPECT_EQ(o.code, 0) << o.all();
        return nlohmann::json::parse(o.out);
    };
    const nlohmann::json base = report(plain);
    ASSERT_GT(base["offloads"].get<int>(), 0);
    EXPECT_EQ(base["faults_injected"].value("F2", 0), 0);
    EXPECT_EQ(report(unused)["final_state_hash"], base["final_state_hash"]);
    const nlohmann::json r = report(failing);
    EXPECT_GT(r["offloads"].get<int>(), 0);
    EXPECT_EQ(r["faults_injected"].value("F2", 0), r["offloads"].get<int>())
        << "every offload fails on the failing disk";
    EXPECT_EQ(r["loads"].get<int>(), 0);
    EXPECT_EQ(r["silent_corruptions"].get<int>(), 0);
}

// Proves: a new copy rests in host memory and moves to disk once newer copies need the room
// (demotions); a load runs on the medium its copy rests on, so the reused tokens' source follows
// the host's capacity: all from host when it holds everything, none when it holds nothing, both
// in between; and a tier's own failures hit the transfers of the copies resting on it.
TEST(StorageTiers, TransfersRunWhereTheirCopyRests) {
    const fs::path source = kSourceDir / "scenarios" / "quickstart.json";
    nlohmann::json doc = read_json(source);
    doc["faults"] = nlohmann::json::array();
    doc.erase("expect");
    const std::uint64_t host_bytes = doc["storage"]["host"]["capacity_bytes"].get<std::uint64_t>();
    const auto report = [&](std::uint64_t capacity, std::uint32_t failure_ppm, const std::string& tag) {
        nlohmann::json copy = doc;
        copy["storage"]["host"]["capacity_bytes"] = capacity;
        copy["storage"]["host"]["failure_ppm"] = failure_ppm;
        const Outcome o = kvcheck({"run", relocated_copy(source, copy, tag).string(), "--json", "--quiet"});
        EXPECT_EQ(o.code, 0) << o.all();
        return nlohmann::json::parse(o.out);
    };
    const auto from = [](const nlohmann::json& r, const char* source_name) {
        return r["reused_tokens_by_source"][source_name].get<std::uint64_t>();
    };
    const nlohmann::json roomy = report(std::uint64_t{1} << 40, 0, "host-roomy");
    EXPECT_EQ(roomy["demotions"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(roomy["memory_bytes"]["host_total"], roomy["memory_bytes"]["disk_total"])
        << "every copy rests in host memory";
    EXPECT_GT(from(roomy, "host"), 0u);
    EXPECT_EQ(from(roomy, "disk"), 0u);

    const nlohmann::json none = report(0, 0, "host-none");
    EXPECT_EQ(none["memory_bytes"]["host_total"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(from(none, "host"), 0u);
    EXPECT_GT(from(none, "disk"), 0u);

    const nlohmann::json shipped = report(host_bytes, 0, "host-shipped");
    EXPECT_GT(shipped["demotions"].get<std::uint64_t>(), 0u)
        << "the quickstart offloads more than its host memory holds";
    EXPECT_LE(shipped["memory_bytes"]["host_total"].get<std::uint64_t>(), host_bytes);
    EXPECT_GT(from(shipped, "host"), 0u);
    EXPECT_GT(from(shipped, "disk"), 0u);

    const nlohmann::json failing = report(std::uint64_t{1} << 40, 1'000'000, "host-failing");
    EXPECT_GT(failing["offloads"].get<int>(), 0);
    EXPECT_EQ(failing["faults_injected"].value("F2", 0), failing["offloads"].get<int>())
        << "every copy is written to the failing host";
    EXPECT_EQ(failing["loads"].get<int>(), 0);
}

// Proves: a tier's link moves one transfer's bytes at a time in each direction. A request whose
// eight-block prefix was spilled to disk (no host memory, 1 MB/s, no latency or jitter) waits for
// eight loads in a row, 8 x 16,384 B at 1e6 B/s, not for the one load it would wait for if each
// transfer had the tier's whole bandwidth to itself; twice the bandwidth halves the wait.
TEST(StorageTiers, ATiersLinkMovesOneTransferAtATime) {
    nlohmann::json doc = tier_link_scenario();
    const nlohmann::json r = passing_report(doc, "tier-link");
    ASSERT_EQ(r["io_wait_ms"]["waits"].get<int>(), 1);
    const int loads = r["loads"].get<int>();
    EXPECT_EQ(loads, 8) << "the whole prefix comes back";
    EXPECT_EQ(r["reused_tokens_by_source"]["disk"].get<int>(), 128);
    const double one_load_ms = 16384 / 1e6 * 1e3;
    EXPECT_NEAR(r["io_wait_ms"]["p99"].get<double>(), loads * one_load_ms, 1e-3);
    doc["storage"]["disk"]["bandwidth_gb_per_s"] = 0.002;
    EXPECT_NEAR(passing_report(doc, "tier-link-faster")["io_wait_ms"]["p99"].get<double>(), loads * one_load_ms / 2,
                1e-3);
}

// Proves: compute.max_load_wait_us cuts a wait for loads off at the cap (model step
// stop_waiting): the request resumes what landed before it (three of eight 16.384 ms loads at
// 50 ms, counted as read from disk) and recomputes the rest, while the other loads go on and land
// (every one counts in `loads`). A cap of 0 starts the loads and waits for none. Structural
// invariants run after every step.
TEST(StorageTiers, MaxLoadWaitStopsWaitingAndTheLoadsLandLater) {
    nlohmann::json doc = tier_link_scenario();
    doc["limits"] = {{"structural_checks", true}};
    doc["compute"] = {{"max_load_wait_us", 50'000}};
    const nlohmann::json r = passing_report(doc, "load-wait-cap");
    EXPECT_EQ(r["load_waits_stopped"].get<int>(), 1);
    ASSERT_EQ(r["io_wait_ms"]["waits"].get<int>(), 1);
    EXPECT_DOUBLE_EQ(r["io_wait_ms"]["p99"].get<double>(), 50.0);
    EXPECT_EQ(r["reused_tokens"].get<int>(), 48);
    EXPECT_EQ(r["reused_tokens_by_source"]["disk"].get<int>(), 48);
    EXPECT_EQ(r["loads"].get<int>(), 8) << "the loads it stopped waiting for still land";
    EXPECT_EQ(r["verdicts"]["io_wait"].get<int>(), 1);
    const fs::path file = scratch("load-wait-cap-text") / "scenario.json";
    write_text(file, doc.dump(2));
    const Outcome text = kvcheck({"run", file.string(), "--out", (scratch("load-wait-cap-out") / "run").string()});
    EXPECT_NE(text.out.find("io_wait_ms p50=50.0 p99=50.0 waits=1 stopped=1 requests_failed=0\n"), std::string::npos)
        << text.out;

    doc["compute"]["max_load_wait_us"] = 0;
    const nlohmann::json none = passing_report(doc, "load-wait-none");
    EXPECT_EQ(none["load_waits_stopped"].get<int>(), 1);
    EXPECT_DOUBLE_EQ(none["io_wait_ms"]["p99"].get<double>(), 0.0);
    EXPECT_EQ(none["reused_tokens"].get<int>(), 0);
    EXPECT_EQ(none["loads"].get<int>(), 8);

    doc["compute"]["max_load_wait_us"] = 1'000'000;  // longer than the loads: the wait ends as without a cap
    const nlohmann::json longer = passing_report(doc, "load-wait-long");
    EXPECT_EQ(longer["load_waits_stopped"].get<int>(), 0);
    EXPECT_EQ(longer["reused_tokens_by_source"]["disk"].get<int>(), 128);
}

// Proves: a full tier under tier_eviction lru drops entries for offloads, each the last copy of
// its entry (tier_full, evictions_last_copy), and so offloads more than under none, which drops
// nothing and leaves the GPU's admission to evict more; both stay clean under validated, and the
// scenario's expectations (tier drops, the windows they cost) fail under none.
TEST(StorageTiers, AFullTierDropsItsColdestEntriesUnderLru) {
    const fs::path source = kSourceDir / "scenarios" / "storage-tier-eviction.json";
    nlohmann::json doc = read_json(source);
    doc["storage"]["tier_eviction"] = "none";
    const fs::path none = relocated_copy(source, doc, "tier-none");
    const nlohmann::json lru = policy_report(source, "validated");
    const nlohmann::json kept = policy_report(none, "validated");
    std::uint64_t dropped = 0;
    for (const auto& [form, count] : lru["evictions_by_cause"]["tier_full"].items()) {
        dropped += count.get<std::uint64_t>();
        EXPECT_GE(lru["evictions_last_copy"][form].get<std::uint64_t>(), count.get<std::uint64_t>()) << form;
    }
    EXPECT_GT(dropped, 100u);
    EXPECT_FALSE(kept["evictions_by_cause"].contains("tier_full"));
    EXPECT_GT(lru["offloads"].get<int>(), kept["offloads"].get<int>());
    const auto admitted = [](const nlohmann::json& r) {
        std::uint64_t n = 0;
        for (const auto& [form, count] : r["evictions_by_cause"]["admission"].items()) n += count.get<std::uint64_t>();
        return n;
    };
    EXPECT_LT(admitted(lru), admitted(kept));
    EXPECT_EQ(lru["silent_corruptions"].get<int>(), 0);
    EXPECT_EQ(kept["silent_corruptions"].get<int>(), 0);
    const Outcome expected = kvcheck({"run", none.string(), "--quiet"});
    EXPECT_EQ(expected.code, 1) << "the scenario's expectations hold without tier eviction:\n" << expected.all();
}

// Proves: compute.load_failure_policy "fail" ends a request at its first failed load (model step
// abort): when F2 fails the first of the third request's eight loads, that request fails,
// computes none of its 144 tokens, while its seven other loads
// go on and land; under "recompute" (the default) it recomputes instead.
TEST(StorageTiers, LoadFailurePolicyFailEndsTheRequest) {
    nlohmann::json doc = tier_link_scenario();
    doc["faults"] = {{{"fault", "F2"}, {"at_request", 2}}};
    const nlohmann::json recomputes = passing_report(doc, "fail-policy-recompute");
    ASSERT_EQ(recomputes["load_failures"].get<int>(), 1);
    EXPECT_EQ(recomputes["requests_failed"].get<int>(), 0);
    doc["compute"] = {{"load_failure_policy", "fail"}};
    const nlohmann::json fails = passing_report(doc, "fail-policy-fail");
    EXPECT_EQ(fails["requests_failed"].get<int>(), 1);
    EXPECT_EQ(fails["load_failures"].get<int>(), 1);
    EXPECT_EQ(fails["loads"].get<int>(), 7) << "the failed request's other loads still land";
    EXPECT_EQ(recomputes["computed_tokens"].get<int>() - fails["computed_tokens"].get<int>(),
              144 - recomputes["reused_tokens"].get<int>())
        << "the failed request computes nothing";
    ASSERT_EQ(fails["io_wait_ms"]["waits"].get<int>(), 1);
    EXPECT_NEAR(fails["io_wait_ms"]["p99"].get<double>(), 16384 / 1e6 * 1e3, 1e-3)
        << "it waited for the first load only";
}
