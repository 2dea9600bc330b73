// The fixture of the output tests (tests/output_safety_test.cpp, tests/output_files_test.cpp):
// the real kvcheck binary run in a shell, and a scratch folder per test.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Cli {
    int code = -1;
    std::string output;  // stdout and stderr together
};

// Runs `command` in a shell; KVCHECK stands for the binary.
Cli shell(const std::string& command) {
    Cli r;
    const std::string line = "KVCHECK=" + std::string(KVCHECK_BINARY) + "; " + command + " 2>&1";
    FILE* pipe = ::popen(line.c_str(), "r");
    if (pipe == nullptr) return r;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.output.append(buffer, n);
    const int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

Cli kvcheck(const std::string& args) { return shell("\"$KVCHECK\" " + args); }

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The `reproduce: ...` line of an output, without the prefix.
std::string reproduce_line(const std::string& output) {
    std::smatch m;
    static const std::regex kLine("reproduce: ([^\n]*)");
    return std::regex_search(output, m, kLine) ? m[1].str() : "";
}

// A printed command line without the binary that starts it: kvcheck run by its path (as these
// tests run it) names that path, so what follows is the command's arguments.
inline std::string after_binary(const std::string& line) {
    const std::string binary = std::string(KVCHECK_BINARY) + " ";
    EXPECT_EQ(line.rfind(binary, 0), 0u) << line;
    return line.rfind(binary, 0) == 0 ? line.substr(binary.size()) : line;
}

class OutputSafety : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() / ("kvcheck_output_" + std::string(info->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string at(const std::string& name) const { return (dir_ / name).string(); }

    // A shard's fuzz.json as a run stopped by a signal would leave it: `from` with the budget of
    // `budget` walks and "interrupted": true.
    void interrupted_copy(const std::string& from, std::uint64_t budget, const std::string& to) const {
        nlohmann::json j = nlohmann::json::parse(slurp(from));
        j["walk_budget"] = budget;
        j["interrupted"] = true;
        fs::create_directories(fs::path(to).parent_path());
        std::ofstream(to) << j.dump(2) << "\n";
    }

    // Resumes `part`'s fuzz.json into folder `name` as if it had been interrupted under a budget
    // of `budget` walks, and expects the files and reproduce line of the run in folder "whole".
    void expect_resume_ends_as_whole(const std::string& part, std::uint64_t budget, const std::string& name,
                                     const Cli& whole) const {
        interrupted_copy(at(part + "/fuzz.json"), budget, at(name + "/fuzz.json"));
        const Cli resumed = kvcheck("fuzz --resume " + at(name + "/fuzz.json") + " --out " + at(name) + " --quiet");
        EXPECT_EQ(resumed.code, 1) << resumed.output;
        for (const char* file : {"/fuzz.json", "/counterexample.json", "/counterexample.dot"})
            EXPECT_EQ(slurp(at(name + file)), slurp(at(std::string("whole") + file))) << name << file;
        EXPECT_EQ(reproduce_line(resumed.output), reproduce_line(whole.output)) << name;
    }

    fs::path dir_;
};

}  // namespace
