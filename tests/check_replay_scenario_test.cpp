// A checker counterexample reaches the attention kernels: `kvcheck check --out DIR` writes the
// counterexample's replay schedules to DIR/schedules, and `kvcheck replay DIR/schedules --backend
// cpu` diverges exactly where the oracle said the read was corrupt.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli_fixtures.hpp"

namespace {

// Mutants whose reference-scope counterexample ends in a corrupt read that resumed from cache.
const std::vector<std::string> kMutants = {"no-lcm", "no-pin", "no-swa-expiry", "registered-is-resident",
                                           "no-index-version"};

TEST(CheckReplay, CounterexampleSchedulesDivergeWhereTheOracleSaid) {
    for (const std::string& policy : kMutants) {
        const fs::path dir = scratch("check-" + policy);
        const Outcome check =
            kvcheck({"check", "--scope", "reference", "--policy", policy, "--out", dir.string(), "--quiet"});
        ASSERT_EQ(check.code, 1) << check.all();
        EXPECT_NE(check.out.find("replay: kvcheck replay " + (dir / "schedules").string() + " --backend cpu"),
                  std::string::npos)
            << check.all();
        const Outcome replay = kvcheck({"replay", (dir / "schedules").string(), "--backend", "cpu", "--json"});
        ASSERT_EQ(replay.code, 0) << replay.all();  // 0: every divergence is one the oracle called corrupt
        const nlohmann::json summary = nlohmann::json::parse(replay.out);
        EXPECT_GE(summary["schedules"].get<int>(), 1) << policy;
        EXPECT_GE(summary["diverged"].get<int>(), 1) << policy << ": the corrupt read must diverge in the kernels";
        EXPECT_EQ(summary["oracle_agreement"]["miss"].get<int>(), 0) << policy;
        EXPECT_EQ(summary["oracle_agreement"]["false_alarm"].get<int>(), 0) << policy;
    }
}

TEST(CheckReplay, ACleanCheckRemovesAnEarlierExport) {
    const fs::path dir = scratch("check-clean");
    ASSERT_EQ(kvcheck({"check", "--scope", "reference", "--policy", "no-pin", "--out", dir.string(), "--quiet"}).code,
              1);
    ASSERT_FALSE(fs::is_empty(dir / "schedules"));
    const Outcome clean =
        kvcheck({"check", "--scope", "small", "--policy", "validated", "--out", dir.string(), "--quiet"});
    ASSERT_EQ(clean.code, 0) << clean.all();
    EXPECT_TRUE(fs::is_empty(dir / "schedules")) << "a clean run leaves no schedules of another run's counterexample";
    EXPECT_FALSE(fs::exists(dir / "counterexample.json"));
}

}  // namespace
