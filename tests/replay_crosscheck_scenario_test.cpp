// The simulator's oracle against real tensors: schedules exported by `kvcheck run` from
// scenarios/quickstart.json and from every scenarios/fault-*.json (enumerated when the test runs;
// a scenario whose trace is missing is skipped) are replayed on the CPU reference backend with the
// real binary. Validated schedules must all be bit exact; for naive schedules the diverging set
// must equal the set the oracle flagged as silent corruption (oracle.corrupt): no false alarm, no
// miss. Scenarios whose schedules are cheap are replayed whole; for the others (DeepSeek prompts of
// up to 126k tokens) a deterministic subset is replayed: see select() and docs/replay.md.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A scenario is replayed whole when the estimated cost of all its schedules stays below this (in
// attended entries, see cost()); the toy fault scenarios come to a few hundred million.
constexpr double kWholeScenarioBudget = 2.0e9;
// Otherwise: up to kSubsetSize schedules, half of them flagged by the oracle (when there are
// enough), the first in file-name order among those whose cost stays below kScheduleCap (about a
// 16k-token DeepSeek-V4 prompt resumed at its middle).
constexpr std::size_t kSubsetSize = 16;
constexpr double kScheduleCap = 1.2e8;

struct Cli {
    int status = -1;
    std::string out;
};

Cli run_cli(const std::string& args) {
    const std::string command = std::string(KVCHECK_BINARY) + " " + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return {};
    Cli r;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.out.append(buffer, n);
    const int status = pclose(pipe);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

json read_json(const fs::path& path) {
    std::ifstream in(path);
    return json::parse(in);
}

// The scenarios to check, in name order: quickstart and every fault scenario present now.
std::vector<fs::path> scenarios() {
    const fs::path dir = fs::path(KVCHECK_SOURCE_DIR) / "scenarios";
    std::vector<fs::path> out;
    if (fs::exists(dir / "quickstart.json")) out.push_back(dir / "quickstart.json");
    std::vector<fs::path> faults;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && name.rfind("fault-", 0) == 0 && e.path().extension() == ".json")
            faults.push_back(e.path());
    }
    std::sort(faults.begin(), faults.end());
    out.insert(out.end(), faults.begin(), faults.end());
    return out;
}

// The workload's trace file when the scenario names one that does not exist (empty otherwise).
std::string missing_trace(const fs::path& scenario) {
    const json doc = read_json(scenario);
    const auto workload = doc.find("workload");
    if (workload == doc.end() || !workload->is_object() || !workload->contains("trace")) return "";
    const fs::path trace = scenario.parent_path() / (*workload)["trace"].get<std::string>();
    return fs::exists(trace) ? "" : trace.string();
}

// Estimated replay work of one schedule, in entries attended: a full group of ratio r is attended
// through p / r entries at position p, an indexer through all compressed entries of its indexed
// group; windows, chunks and linear states are bounded and left out. The reference runs the whole
// prompt, the resumed run the positions after resume_len, and each source with an explicit token
// list its own prefix.
double cost(const json& s) {
    double per_token = 0.0;
    const json& groups = s["model"]["groups"];
    for (const json& g : groups) {
        if (g["kind"] == "full") per_token += 1.0 / g["compress_ratio"].get<double>();
        if (g["kind"] == "indexer")
            per_token += 1.0 / groups[g["indexed_group"].get<std::size_t>()]["compress_ratio"].get<double>();
    }
    const auto quadratic = [](double to, double from) { return (to * to - from * from) / 2.0; };
    const double prompt = static_cast<double>(s["tokens"].size());
    double positions = quadratic(prompt, 0.0) + quadratic(prompt, s["resume_len"].get<double>());
    std::set<std::vector<int>> sources;
    for (const json& read : s["reads"]) {
        const json& source = read["source"];
        if (source.is_null() || source["tokens"].is_string()) continue;
        std::vector<int> tokens = source["tokens"].get<std::vector<int>>();
        tokens.resize(std::min(tokens.size(), source["end"].get<std::size_t>()));
        if (sources.insert(tokens).second) positions += quadratic(static_cast<double>(tokens.size()), 0.0);
    }
    return per_token * positions;
}

struct Exported {
    std::string name;  // file name
    bool corrupt = false;
    double cost = 0.0;
};

// The schedules to replay: all of them when they are cheap together; otherwise up to kSubsetSize,
// taken in file-name order among those under kScheduleCap, alternately flagged and unflagged by
// the oracle (one class fills in when the other runs out). Deterministic for a given export.
std::vector<std::string> select(const std::vector<Exported>& all, bool& whole) {
    double total = 0.0;
    for (const Exported& e : all) total += e.cost;
    std::vector<std::string> out;
    whole = total <= kWholeScenarioBudget;
    if (whole) {
        for (const Exported& e : all) out.push_back(e.name);
        return out;
    }
    std::vector<const Exported*> flagged;
    std::vector<const Exported*> unflagged;
    for (const Exported& e : all)
        if (e.cost <= kScheduleCap) (e.corrupt ? flagged : unflagged).push_back(&e);
    for (std::size_t i = 0; out.size() < kSubsetSize && (i < flagged.size() || i < unflagged.size()); ++i) {
        if (i < flagged.size()) out.push_back(flagged[i]->name);
        if (i < unflagged.size() && out.size() < kSubsetSize) out.push_back(unflagged[i]->name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct Outcome {
    std::string scenario;
    bool skipped = false;
    std::string why;
    bool whole = false;
    int exported = 0;
    int replayed = 0;
    int flagged = 0;  // oracle.corrupt among the replayed
    int bit_exact = 0;
    int diverged = 0;
    std::vector<std::string> false_alarms;  // diverged, the oracle said clean
    std::vector<std::string> misses;        // the oracle said corrupt, bit exact
};

std::string describe(const json& result, const json& summary) {
    std::string text = result["schedule"].get<std::string>();
    for (const json& d : summary["divergences"])
        if (d["schedule"] == result["schedule"])
            text += " (first difference: " + d["group"].get<std::string>() + " " + d["form"].get<std::string>() +
                    " at " + std::to_string(d["position"].get<int>()) + ")";
    return text;
}

// Exports the schedules of `scenario` under `policy`, replays the selection, and counts.
Outcome check(const fs::path& scenario, const std::string& policy) {
    Outcome o;
    o.scenario = scenario.stem().string();
    if (const std::string trace = missing_trace(scenario); !trace.empty()) {
        o.skipped = true;
        o.why = "trace " + trace + " is missing";
        return o;
    }
    const fs::path work = fs::temp_directory_path() /
                          ("kvcheck-crosscheck-" + std::to_string(getpid()) + "-" + o.scenario + "-" + policy);
    fs::remove_all(work);
    const fs::path exported = work / "exported";
    const fs::path chosen = work / "chosen";
    fs::create_directories(chosen);
    const Cli run = run_cli("run " + scenario.string() + " --policy " + policy + " --quiet --export-schedules " +
                            exported.string());
    // 0: the scenario's expectations held, 1: they did not (the schedules are written either way).
    EXPECT_TRUE(run.status == 0 || run.status == 1)
        << o.scenario << " " << policy << ": kvcheck run exited " << run.status << "\n"
        << run.out;
    if (run.status != 0 && run.status != 1) return o;
    std::vector<Exported> all;
    if (fs::exists(exported))
        for (const fs::directory_entry& e : fs::directory_iterator(exported)) {
            if (e.path().extension() != ".json") continue;
            const json s = read_json(e.path());
            all.push_back({e.path().filename().string(), s["oracle"]["corrupt"].get<bool>(), cost(s)});
        }
    std::sort(all.begin(), all.end(), [](const Exported& a, const Exported& b) { return a.name < b.name; });
    o.exported = static_cast<int>(all.size());
    const std::vector<std::string> names = select(all, o.whole);
    if (names.empty()) {
        fs::remove_all(work);
        return o;
    }
    for (const std::string& name : names) fs::copy_file(exported / name, chosen / name);
    const Cli replay = run_cli("replay " + chosen.string() + " --backend cpu --json");
    // 0: every verdict agrees with the oracle, 1: some does not; anything else is an error.
    EXPECT_TRUE(replay.status == 0 || replay.status == 1)
        << o.scenario << " " << policy << ": kvcheck replay exited " << replay.status << "\n"
        << replay.out.substr(0, 2000);
    if (replay.status != 0 && replay.status != 1) return o;
    const json summary = json::parse(replay.out, nullptr, false);
    if (summary.is_discarded()) {
        ADD_FAILURE() << o.scenario << " " << policy << ": kvcheck replay --json printed no JSON:\n"
                      << replay.out.substr(0, 2000);
        return o;
    }
    for (const json& r : summary["results"]) {
        ++o.replayed;
        const bool corrupt = r["oracle_corrupt"].get<bool>();
        const bool exact = r["bit_exact"].get<bool>();
        o.flagged += corrupt ? 1 : 0;
        (exact ? o.bit_exact : o.diverged) += 1;
        if (!exact && !corrupt) o.false_alarms.push_back(describe(r, summary));
        if (exact && corrupt) o.misses.push_back(describe(r, summary));
    }
    fs::remove_all(work);
    return o;
}

std::string report(const Outcome& o, const std::string& policy) {
    std::ostringstream line;
    line << "crosscheck " << o.scenario << " " << policy << ": ";
    if (o.skipped) {
        line << "skipped (" << o.why << ")";
        return line.str();
    }
    line << "exported=" << o.exported << " replayed=" << o.replayed << (o.whole ? " (all)" : " (subset)")
         << " flagged=" << o.flagged << " diverged=" << o.diverged << " bit_exact=" << o.bit_exact
         << " false_alarm=" << o.false_alarms.size() << " miss=" << o.misses.size();
    return line.str();
}

std::vector<Outcome> check_all(const std::string& policy) {
    std::vector<Outcome> out;
    for (const fs::path& scenario : scenarios()) {
        out.push_back(check(scenario, policy));
        const std::string line = report(out.back(), policy);
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        ::testing::Test::RecordProperty(out.back().scenario, line);
    }
    return out;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += "\n    " + item;
    return out;
}

}  // namespace

// Proves: under the validated policy every exported schedule that is replayed (all of a cheap
// scenario, a subset of a costly one) is bit exact on the CPU reference, and the oracle calls
// every one of them clean.
TEST(ReplayCrosscheck, ValidatedSchedulesAreBitExact) {
    const std::vector<Outcome> outcomes = check_all("validated");
    ASSERT_FALSE(outcomes.empty()) << "no quickstart or fault scenario under scenarios/";
    int replayed = 0;
    for (const Outcome& o : outcomes) {
        replayed += o.replayed;
        EXPECT_TRUE(o.false_alarms.empty()) << o.scenario << ": validated schedules diverged:" << join(o.false_alarms);
        EXPECT_TRUE(o.misses.empty()) << o.scenario << ": the oracle flagged validated schedules that replay bit exact:"
                                      << join(o.misses);
        EXPECT_EQ(o.bit_exact, o.replayed) << o.scenario;
    }
    EXPECT_GT(replayed, 0) << "nothing was replayed";
}

// Proves: under the naive policy the schedules whose replay diverges are exactly those the oracle
// flagged as silent corruption: no false alarm (diverged, oracle clean) and no miss (oracle
// corrupt, bit exact), in every scenario; and the check is not vacuous (some do diverge).
TEST(ReplayCrosscheck, NaiveDivergencesAreExactlyTheOraclesCorruptions) {
    const std::vector<Outcome> outcomes = check_all("naive");
    ASSERT_FALSE(outcomes.empty()) << "no quickstart or fault scenario under scenarios/";
    int diverged = 0;
    for (const Outcome& o : outcomes) {
        diverged += o.diverged;
        EXPECT_TRUE(o.false_alarms.empty())
            << o.scenario << ": diverged although the oracle said clean:" << join(o.false_alarms);
        EXPECT_TRUE(o.misses.empty()) << o.scenario
                                      << ": the oracle said corrupt but the replay is bit exact:" << join(o.misses);
    }
    EXPECT_GT(diverged, 0) << "no naive schedule diverged: the cross-check would prove nothing";
}

// Proves: the trust-partial-load mutant's torn loads replay as the oracle judged them: on the F2
// partial-load scenario the schedules whose replay diverges (their torn reads carry damage "torn")
// are exactly those the oracle flagged, and some do diverge.
TEST(ReplayCrosscheck, TornLoadDivergencesAreExactlyTheOraclesCorruptions) {
    const Outcome o =
        check(fs::path(KVCHECK_SOURCE_DIR) / "scenarios" / "fault-f2-partial-load.json", "trust-partial-load");
    std::printf("%s\n", report(o, "trust-partial-load").c_str());
    ASSERT_FALSE(o.skipped) << o.why;
    EXPECT_TRUE(o.false_alarms.empty()) << "diverged although the oracle said clean:" << join(o.false_alarms);
    EXPECT_TRUE(o.misses.empty()) << "the oracle said corrupt but the replay is bit exact:" << join(o.misses);
    EXPECT_GT(o.diverged, 0) << "no torn schedule diverged: the cross-check would prove nothing";
}
