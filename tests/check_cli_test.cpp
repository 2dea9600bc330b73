// The check and mutants commands through the real kvcheck binary: the mutation score line, the
// --scope help, and checkpoints whose contents are wrong blamed on their file.
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "model/policy.hpp"
#include "sim/check/checkpoint.hpp"
#include "sim/check/explorer.hpp"
#include "sim/io/files.hpp"

using namespace kvcheck;

namespace {

// Runs the kvcheck binary with `args`; returns its exit code and stdout and stderr together.
std::pair<int, std::string> run_cli(const std::string& args) {
    std::string output;
    FILE* pipe = ::popen((std::string(KVCHECK_BINARY) + " " + args + " 2>&1").c_str(), "r");
    if (pipe == nullptr) return {-1, output};
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

// `kvcheck mutants` ends with its score: a caught mutant counts, one the scope is too small for
// does not and fails the command, and validated's line says whether it stayed clean.
TEST(MutantsCommand, PrintsTheMutationScore) {
    const auto [caught_code, caught] = run_cli("mutants --scope small --policy no-revalidate --quiet");
    EXPECT_EQ(caught_code, 0) << caught;
    EXPECT_NE(caught.find("\nmutation score: 1/1 broken policies detected\n"), std::string::npos) << caught;
    // docs/tutorial.md: the small scope is too small to catch no-lcm.
    const auto [missed_code, missed] = run_cli("mutants --scope small --policy no-lcm --quiet");
    EXPECT_EQ(missed_code, 1) << missed;
    EXPECT_NE(missed.find("\nmutation score: 0/1 broken policies detected\n"), std::string::npos) << missed;
    const auto [clean_code, clean] = run_cli("mutants --scope small --policy validated --quiet");
    EXPECT_EQ(clean_code, 0) << clean;
    sim::ExploreOptions options;
    options.max_seconds = 300;
    const std::string states = std::to_string(
        sim::explore(sim::named_scope("small"), model::find_policy("validated")->defenses, options).states);
    EXPECT_NE(clean.find("\nmutation score: validated clean over " + states + " states\n"), std::string::npos) << clean;
}

// The --scope help of check and mutants names every scope there is.
TEST(MutantsCommand, ScopeHelpNamesEveryScope) {
    for (const char* command : {"check", "mutants"}) {
        const auto [code, help] = run_cli(std::string(command) + " --help");
        EXPECT_EQ(code, 0) << help;
        for (const std::string& name : sim::scope_names())
            EXPECT_NE(help.find(name), std::string::npos) << command << ": " << name;
    }
}

// Proves: what is wrong inside a checkpoint given to --resume is said of its file, not of a flag:
// a checkpoint whose question names an unknown invariant, and one whose recorded steps cannot be
// replayed (both written with a valid checksum, as a forged or mis-built file would be).
TEST(CheckCommand, ForgedCheckpointsAreBlamedOnTheirFile) {
    const std::string dir = ::testing::TempDir() + "/kvcheck-forged";
    std::filesystem::remove_all(dir);
    const auto [stopped_code, stopped] = run_cli("check --scope small --max-states 2000 --out " + dir + " --quiet");
    ASSERT_EQ(stopped_code, 0) << stopped;
    const sim::ExploreCheckpoint good =
        sim::decode_checkpoint(sim::read_file(dir + "/check.checkpoint"), "check.checkpoint");

    sim::ExploreCheckpoint target = good;
    target.target = "XX9";
    sim::write_file_atomic(dir + "/target.checkpoint", sim::encode_checkpoint(target));
    const auto [unknown_code, unknown] = run_cli("check --resume " + dir + "/target.checkpoint --quiet");
    EXPECT_EQ(unknown_code, 2) << unknown;
    EXPECT_NE(unknown.find("kvcheck: " + dir + "/target.checkpoint: names an unknown invariant \"XX9\""),
              std::string::npos)
        << unknown;

    sim::ExploreCheckpoint steps = good;
    for (std::size_t i = 1; i < steps.steps.size(); ++i) steps.steps[i] = {model::StepKind::finish, 99, 0};
    sim::write_file_atomic(dir + "/steps.checkpoint", sim::encode_checkpoint(steps));
    const auto [replay_code, replay] = run_cli("check --resume " + dir + "/steps.checkpoint --quiet");
    EXPECT_EQ(replay_code, 2) << replay;
    EXPECT_TRUE(std::regex_search(
        replay, std::regex("kvcheck: " + dir +
                           "/steps.checkpoint: the checkpoint's node [0-9]+ takes a step that is not enabled there")))
        << replay;
}
