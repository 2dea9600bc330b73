// timeline.json: the Chrome trace event file a run writes. Its caps hold, its events are the ones
// docs/tutorial.md describes (request tracks, fault and first-violation instants, memory counters),
// and the streamed file is the JSON value it stands for.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/world.hpp"
#include "sim/des/engine.hpp"
#include "sim/report/timeline.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/model_fixtures.hpp"

namespace {

using kvcheck::sim::Timeline;
using nlohmann::json;

const std::string kSourceDir = KVCHECK_SOURCE_DIR;

json run_timeline(const std::string& scenario_file, const std::string& policy) {
    kvcheck::sim::Scenario scenario = kvcheck::sim::load_scenario(kSourceDir + "/scenarios/" + scenario_file);
    kvcheck::sim::RunOptions options;
    options.policy = policy;
    return json::parse(kvcheck::sim::run_scenario(scenario, options).timeline.dump());
}

TEST(TimelineTest, AnEmptyTimelineIsTheProcessNameAlone) {
    const std::string text = Timeline(4).dump();
    EXPECT_EQ(text.back(), '\n');
    const json parsed = json::parse(text);
    EXPECT_EQ(parsed.dump() + "\n", text);
    ASSERT_EQ(parsed["traceEvents"].size(), 2u);
    EXPECT_EQ(parsed["traceEvents"][0]["ph"], "M");
    EXPECT_EQ(parsed["traceEvents"][0]["args"]["name"], "kvcheck");
    EXPECT_EQ(parsed["traceEvents"][1]["name"], "thread_name");
    EXPECT_EQ(parsed["traceEvents"][1]["tid"], 0);
    EXPECT_EQ(parsed["traceEvents"][1]["args"]["name"], "faults and violations");
    EXPECT_EQ(parsed["displayTimeUnit"], "ms");
}

// Proves: every track is named (the instants' track 0, request uid's track uid + 1), a request
// slice carries its verdict and reason, events keep their order among the memory samples, and
// the first request past the cap leaves an instant that says so and is counted.
TEST(TimelineTest, SpansInstantsAndSamplesComeOutInOrderAndCapped) {
    Timeline t(2);
    const kvcheck::model::World world = kvcheck::model::fixtures::toy_world();
    t.memory(0, world);
    t.span(0, "request", 1'000, 5'000, "12 in, 3 out", "partial_recompute", "swa_window.window_expired cut 64 tokens");
    t.span(2, "request", 1'000, 5'000, "not tracked");  // uid 2 is past the first two requests
    t.span(3, "request", 1'500, 5'000, "not tracked either");
    t.memory(500'000, world);  // less than 1 ms after the last sample
    t.instant("F2 load failure", 2'000'000, "io_fail \"op\" 1");
    t.memory(2'000'000, world);
    t.span(1, "io_wait", 3'000, 3'500);
    EXPECT_EQ(t.untracked_requests(), 2u);
    const std::string text = t.dump();
    const json parsed = json::parse(text);
    EXPECT_EQ(parsed.dump() + "\n", text) << "the streamed file differs from the value dumped whole";
    const json& events = parsed["traceEvents"];
    ASSERT_EQ(events.size(), 10u);
    for (int track = 0; track < 3; ++track) {
        EXPECT_EQ(events[1 + track]["name"], "thread_name");
        EXPECT_EQ(events[1 + track]["tid"], track);
        EXPECT_EQ(events[1 + track]["args"]["name"],
                  track == 0 ? "faults and violations" : "request " + std::to_string(track - 1));
    }
    EXPECT_EQ(events[4]["name"], "memory_bytes");
    EXPECT_EQ(events[4]["ph"], "C");
    EXPECT_EQ(events[4]["args"].size(), static_cast<std::size_t>(kvcheck::model::kFormCount) + 1);
    EXPECT_EQ(events[5]["name"], "request");
    EXPECT_EQ(events[5]["tid"], 1);
    EXPECT_DOUBLE_EQ(events[5]["ts"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(events[5]["dur"].get<double>(), 4.0);
    EXPECT_EQ(events[5]["args"]["detail"], "12 in, 3 out");
    EXPECT_EQ(events[5]["args"]["verdict"], "partial_recompute");
    EXPECT_EQ(events[5]["args"]["reason"], "swa_window.window_expired cut 64 tokens");
    EXPECT_EQ(events[6]["name"], "timeline request cap reached");
    EXPECT_EQ(events[6]["tid"], 0);
    EXPECT_EQ(events[6]["args"]["detail"].get<std::string>().rfind("request 2 and every later one have no track", 0),
              0u);
    EXPECT_EQ(events[7]["ph"], "i");
    EXPECT_EQ(events[7]["s"], "g");
    EXPECT_EQ(events[7]["args"]["detail"], "io_fail \"op\" 1");
    EXPECT_EQ(events[8]["name"], "memory_bytes");
    EXPECT_DOUBLE_EQ(events[8]["ts"].get<double>(), 2000.0);
    EXPECT_EQ(events[9]["name"], "io_wait");
    EXPECT_EQ(events[9]["tid"], 2);
    EXPECT_FALSE(events[9].contains("args")) << "a span without detail has no args";
}

// Proves: fault instants stop at the cap, and the first one past it leaves one instant of its own,
// at its time, that counts every instant left out; first violations are drawn past the cap.
TEST(TimelineTest, InstantsStopAtTheirCapAndSaySo) {
    Timeline t(0);
    std::size_t taken = 0;
    while (t.takes_instants()) {
        t.instant("F6 eviction between validate and read", taken, "");
        ++taken;
    }
    EXPECT_EQ(taken, 20'000u);
    for (std::size_t i = 0; i < 5; ++i) t.instant("past the cap", taken + i, "dropped");
    t.instant("violation OR1_ground_truth", taken + 5, "request 3 ...", false);
    const json events = json::parse(t.dump())["traceEvents"];
    ASSERT_EQ(events.size(), 2 + taken + 2);  // the process and track names, the instants, the cap's, the violation
    const json& cap = events[2 + taken];
    EXPECT_EQ(cap["name"], "timeline instant cap reached");
    EXPECT_DOUBLE_EQ(cap["ts"].get<double>(), static_cast<double>(taken) / 1000.0);
    EXPECT_EQ(cap["args"]["detail"].get<std::string>().rfind("this and 4 later fault instants are not drawn", 0), 0u)
        << cap;
    EXPECT_EQ(events.back()["name"], "violation OR1_ground_truth");
}

// Proves: a run longer than the sample cap in milliseconds keeps at most the cap's samples, evenly
// spaced from its first step to its last (the spacing doubles each time the cap fills), rather
// than stopping at the cap's first fill and leaving the rest of the run undrawn.
TEST(TimelineTest, MemorySamplesSpanTheWholeRun) {
    Timeline t(0);
    const kvcheck::model::World world = kvcheck::model::fixtures::toy_world();
    const std::uint64_t ms = 1'000'000;
    const std::uint64_t steps = 90'000;  // a step every 0.5 ms: 45 s of run
    for (std::uint64_t i = 0; i < steps; ++i) t.memory(i * ms / 2, world);
    std::vector<double> ts;
    const json timeline = json::parse(t.dump());
    for (const json& e : timeline["traceEvents"])
        if (e["ph"] == "C") ts.push_back(e["ts"].get<double>());
    ASSERT_GE(ts.size(), 10'000u);
    EXPECT_LE(ts.size(), 20'000u);
    EXPECT_DOUBLE_EQ(ts.front(), 0.0);
    const double last_step_us = static_cast<double>((steps - 1) * ms / 2) / 1000.0;
    const double spacing_us = ts[1] - ts[0];
    EXPECT_EQ(spacing_us, 4'000.0) << "1 ms doubled twice: 45,000 ms at 2 ms would be 22,500 samples";
    EXPECT_GE(ts.back(), last_step_us - spacing_us) << "the samples stop before the run's end";
    for (std::size_t i = 1; i < ts.size(); ++i) ASSERT_EQ(ts[i] - ts[i - 1], spacing_us) << "sample " << i;
}

TEST(TimelineTest, ANaiveQuickstartRunDrawsRequestsFaultsViolationsAndMemory) {
    const json events = run_timeline("quickstart.json", "naive")["traceEvents"];
    std::set<std::uint32_t> finished;
    std::set<std::string> violations;
    std::size_t corrupted = 0;
    std::size_t faults = 0;
    std::size_t samples = 0;
    double last_sample_ts = -1e18;
    for (const json& e : events) {
        const std::string name = e["name"];
        const std::string ph = e["ph"];
        if (ph == "X") {
            EXPECT_TRUE(name == "request" || name == "prefill" || name == "io_wait") << name;
            EXPECT_GE(e["dur"].get<double>(), 0.0);
            if (name == "request") {
                EXPECT_TRUE(finished.insert(e["tid"].get<std::uint32_t>()).second) << "two request spans";
                const std::string verdict = e["args"].value("verdict", "");
                EXPECT_TRUE(verdict == "resumable" || verdict == "io_wait" || verdict == "partial_recompute" ||
                            verdict == "full_recompute")
                    << e;
                EXPECT_FALSE(e["args"].value("reason", "").empty()) << e;
                if (e["args"]["reason"].get<std::string>().starts_with("silent corruption: ")) ++corrupted;
            }
        } else if (ph == "i") {
            if (name.rfind("violation ", 0) == 0) {
                EXPECT_TRUE(violations.insert(name).second) << "only the first violation of each invariant: " << name;
            } else {
                EXPECT_EQ(name[0], 'F') << name;
                ++faults;
            }
        } else if (ph == "C") {
            const double ts = e["ts"];
            EXPECT_GE(ts, last_sample_ts + 1000.0) << "at most one sample per simulated millisecond";
            last_sample_ts = ts;
            ++samples;
        } else {
            EXPECT_EQ(ph, "M");
        }
    }
    EXPECT_GT(finished.size(), 0u);
    EXPECT_EQ(finished.size(), 400u) << "every request of the run has its track";
    EXPECT_EQ(*finished.rbegin(), 400u) << "request uid is on track uid + 1";
    EXPECT_GT(corrupted, 0u) << "a corrupted request's slice says so";
    EXPECT_GT(faults, 0u) << "quickstart injects faults";
    EXPECT_TRUE(violations.count("violation OR1_ground_truth")) << "the naive rule corrupts quickstart's resumes";
    EXPECT_GT(samples, 1u);
}

// Proves: an I/O fault's instant names its own transfer. Quickstart's F4 firings delay many
// different transfers (each detail names the one it delayed, where they all used to describe
// transfer slot 0), and an F2 failure is a load failure or an offload failure as its transfer is.
TEST(TimelineTest, IoFaultInstantsNameTheirTransfer) {
    const json events = run_timeline("quickstart.json", "validated")["traceEvents"];
    std::set<std::string> late;
    std::size_t failures = 0;
    for (const json& e : events) {
        if (e["ph"] != "i") continue;
        const std::string name = e["name"];
        const std::string detail = e["args"]["detail"];
        if (name == "F4 late I/O") {
            EXPECT_TRUE(detail.starts_with("io_complete load of ") || detail.starts_with("io_complete offload of "))
                << detail;
            late.insert(detail);
        } else if (name == "F2 load failure" || name == "F2 offload failure") {
            EXPECT_TRUE(detail.starts_with(name == "F2 load failure" ? "io_fail load of " : "io_fail offload of "))
                << name << ": " << detail;
            ++failures;
        }
    }
    EXPECT_GT(late.size(), 10u);
    EXPECT_GT(failures, 0u);
}

TEST(TimelineTest, TheSameRunTwiceGivesTheSameTimeline) {
    EXPECT_EQ(run_timeline("fault-f2-load-failure.json", ""), run_timeline("fault-f2-load-failure.json", ""));
}

}  // namespace
