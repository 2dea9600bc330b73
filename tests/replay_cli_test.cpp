// `kvcheck replay` through the real binary: exit codes and the JSON summary, every kernel width
// giving the same bits, and the CUDA-only options refused where CUDA is not built or present.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuda_replay/backend.hpp"
#include "cuda_replay/clean_reads.hpp"
#include "model/preset.hpp"
#include "sim/format/schedule.hpp"
#include "tests/replay_fixtures.hpp"

using namespace kvcheck;
using namespace kvcheck::replay;

using fixtures::deepseek;
using fixtures::random_tokens;
using fixtures::toy;

namespace {

struct Cli {
    int status;
    std::string out;
};

// Runs `kvcheck ARGS` (or the whole command line when `binary` is false), with stderr.
Cli run_cli(const std::string& args, bool binary = true) {
    const std::string command = (binary ? std::string(KVCHECK_BINARY) + " " : std::string()) + args + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    EXPECT_NE(pipe, nullptr);
    std::string out;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::filesystem::path fresh_dir(const std::string& name) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("kvcheck-replay-" + name + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

void write(const std::filesystem::path& path, const nlohmann::json& doc) { std::ofstream(path) << doc.dump(); }

}  // namespace

// Proves: `kvcheck replay DIR --json` prints the summary keys and exits 0 when every divergence
// matches the oracle, 1 on a false alarm, 2 on bad input; `--limit` cuts the list.
TEST(ReplayCli, ExitCodesAndJson) {
    const auto dir = fresh_dir("cli");
    Schedule corrupt = toy(64, 96);
    corrupt.reads[0].damage = Damage::lost_block;
    corrupt.oracle_corrupt = true;
    write(dir / "a-clean.json", schedule_to_json(toy(64, 96)));
    write(dir / "b-corrupt.json", schedule_to_json(corrupt));
    Cli r = run_cli("replay " + dir.string() + " --backend cpu --json");
    ASSERT_EQ(r.status, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["schedules"], 2);
    EXPECT_EQ(j["bit_exact"], 1);
    EXPECT_EQ(j["diverged"], 1);
    EXPECT_EQ(j["divergences"][0]["group"], corrupt.groups[static_cast<std::size_t>(corrupt.reads[0].group)].name);
    EXPECT_EQ(j["divergences"][0]["form"], std::string(model::form_name(corrupt.reads[0].form)));
    EXPECT_EQ(j["divergences"][0]["oracle_corrupt"], true);
    EXPECT_EQ(j["oracle_agreement"]["agree"], 2);
    EXPECT_EQ(j["graph_guard"], true);
    r = run_cli("replay " + dir.string() + " --limit 1 --json");
    EXPECT_EQ(nlohmann::json::parse(r.out)["schedules"], 1);
    // Replaying on several threads changes nothing, including the (file-name) order.
    for (int copy = 0; copy < 4; ++copy)
        write(dir / ("e-copy-" + std::to_string(copy) + ".json"), schedule_to_json(toy(40 + copy, 96)));
    const Cli one = run_cli("replay " + dir.string() + " --json --jobs 1");
    const Cli three = run_cli("replay " + dir.string() + " --json --jobs 3");
    ASSERT_EQ(one.status, 0) << one.out;
    EXPECT_EQ(three.status, 0);
    EXPECT_EQ(one.out, three.out);
    EXPECT_EQ(nlohmann::json::parse(three.out)["schedules"], 6);
    for (int copy = 0; copy < 4; ++copy) std::filesystem::remove(dir / ("e-copy-" + std::to_string(copy) + ".json"));

    corrupt.oracle_corrupt = false;
    write(dir / "c-false-alarm.json", schedule_to_json(corrupt));
    r = run_cli("replay " + dir.string());
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("false_alarm"), std::string::npos);

    std::ofstream(dir / "d-broken.json") << "{\"schema\": ";
    r = run_cli("replay " + dir.string());
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("d-broken.json:1:"), std::string::npos) << r.out;
    std::filesystem::remove_all(dir);
}

// Proves: the CPU kernel computes the same bits at every vector width it dispatches to (AVX-512,
// AVX2, SSE2; KVCHECK_REPLAY_ISA lowers the choice, so each width runs on a machine that has
// it), on clean, damaged and cross-run schedules of several presets.
TEST(ReplayCli, EveryKernelWidthGivesTheSameBits) {
    const auto dir = fresh_dir("isa");
    Schedule damaged = toy(96);
    for (std::size_t i = 0; i < damaged.reads.size(); ++i)
        damaged.reads[i].damage = i % 2 == 0 ? Damage::lost_half : Damage::misaligned;
    damaged.oracle_corrupt = true;
    write(dir / "a.json", schedule_to_json(toy(40)));
    write(dir / "b.json", schedule_to_json(damaged));
    write(dir / "c.json", schedule_to_json(deepseek(512)));
    write(dir / "d.json",
          schedule_to_json(clean_schedule(*model::find_preset("deepseek-v32"), random_tokens(3, 700), 512, 2, 256, 2)));
    const Cli widest = run_cli("replay " + dir.string() + " --json");
    ASSERT_EQ(widest.status, 0) << widest.out;
    for (const char* isa : {"avx2", "baseline"}) {
        const Cli lowered = run_cli("env KVCHECK_REPLAY_ISA=" + std::string(isa) + " " + KVCHECK_BINARY + " replay " +
                                        dir.string() + " --json",
                                    false);
        EXPECT_EQ(lowered.status, 0) << isa;
        EXPECT_EQ(lowered.out, widest.out) << isa;
    }
    std::filesystem::remove_all(dir);
}

// Proves: `--backend cuda` without a usable backend says why ("built without CUDA" or "no CUDA
// device") and exits 2.
TEST(ReplayCli, UnavailableCudaBackendExits2) {
    std::string why;
    if (make_backend("cuda", why)) GTEST_SKIP() << "a CUDA device is present; tests/replay_cuda_test.cpp covers it";
    const auto dir = fresh_dir("nocuda");
    write(dir / "a.json", schedule_to_json(toy(64, 96)));
    const Cli r = run_cli("replay " + dir.string() + " --backend cuda");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.out.find(built_with_cuda() ? "no CUDA device" : "built without CUDA"), std::string::npos) << r.out;
    // The form of every other flag error: one line naming the flag.
    EXPECT_EQ(r.out.rfind("kvcheck: <input>:--backend: cuda: ", 0), 0u) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    std::filesystem::remove_all(dir);
}

// Proves: `--no-graph-guard` is refused on the CPU backend, which captures no decode graphs, with
// one line naming the flag and exit 2, and `make_backend` refuses the option there too.
TEST(ReplayCli, NoGraphGuardNeedsTheCudaBackend) {
    std::string why;
    EXPECT_EQ(make_backend("cpu", why, {.graph_guard = false}), nullptr);
    EXPECT_NE(why.find("no decode graphs"), std::string::npos) << why;
    const auto dir = fresh_dir("noguard");
    write(dir / "a.json", schedule_to_json(toy(64, 96)));
    const Cli r = run_cli("replay " + dir.string() + " --no-graph-guard");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out,
              "kvcheck: <input>:--no-graph-guard: needs --backend cuda: the cpu backend captures no decode graphs\n");
    std::filesystem::remove_all(dir);
}
