// What the tests that run the kvcheck binary on scenario files share: the source folder, a scratch
// folder per test process, running the binary with its output captured, and relocated copies of
// scenario files. Each test file gets its own copy (an unnamed namespace; inline, so that a file
// need not use them all).
#pragma once

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = KVCHECK_SOURCE_DIR;
const std::string kBinary = KVCHECK_BINARY;

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

inline nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(read_text(path)); }

// One scratch folder per test process, emptied when the process ends.
inline const fs::path& scratch_root() {
    static const fs::path root = [] {
        fs::path dir = fs::temp_directory_path() / ("kvcheck-scenario-test-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        return dir;
    }();
    return root;
}

struct ScratchCleanup {
    ~ScratchCleanup() {
        std::error_code ec;
        fs::remove_all(fs::temp_directory_path() / ("kvcheck-scenario-test-" + std::to_string(::getpid())), ec);
    }
} scratch_cleanup;

inline fs::path scratch(const std::string& name) {
    const fs::path dir = scratch_root() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

struct Outcome {
    int code = -1;  // exit code; -1 when the process did not exit normally
    std::string out;
    std::string err;
    std::string command;
    std::string all() const { return "$ " + command + "\n--- stdout\n" + out + "--- stderr\n" + err; }
};

// Runs kvcheck with `args` in the source folder (so relative scenario paths work).
inline Outcome kvcheck(const std::vector<std::string>& args) {
    static int counter = 0;
    const fs::path dir = scratch("run-" + std::to_string(counter++));
    const std::string out_path = (dir / "stdout").string();
    const std::string err_path = (dir / "stderr").string();
    std::vector<std::string> owned = {kBinary};
    owned.insert(owned.end(), args.begin(), args.end());
    Outcome o;
    for (const std::string& a : owned) o.command += (o.command.empty() ? "" : " ") + a;
    std::vector<char*> argv;
    for (std::string& a : owned) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string cwd = kSourceDir.string();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out_fd < 0 || err_fd < 0 || ::chdir(cwd.c_str()) != 0) ::_exit(126);
        ::dup2(out_fd, 1);
        ::dup2(err_fd, 2);
        // Started as a shell finds it on the PATH (argv[0] "kvcheck"), so that printed reproduce
        // lines begin "kvcheck ..." whatever the build folder (sim::kvcheck_command).
        argv[0] = const_cast<char*>("kvcheck");
        ::execv(kBinary.c_str(), argv.data());
        ::_exit(127);
    }
    if (pid < 0) return o;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = read_text(out_path);
    o.err = read_text(err_path);
    return o;
}

// The trace a scenario names, resolved like the loader does; nullopt when it names none.
inline std::optional<fs::path> trace_of(const fs::path& file, const nlohmann::json& doc) {
    if (!doc.contains("workload") || !doc["workload"].contains("trace")) return std::nullopt;
    return (file.parent_path() / doc["workload"]["trace"].get<std::string>()).lexically_normal();
}

// A copy of a scenario in the scratch folder, with its trace path made absolute so it still loads.
inline fs::path relocated_copy(const fs::path& file, nlohmann::json doc, const std::string& name) {
    if (const std::optional<fs::path> trace = trace_of(file, doc)) doc["workload"]["trace"] = trace->string();
    const fs::path copy = scratch(name) / file.filename();
    write_text(copy, doc.dump(2));
    return copy;
}

// scenarios/FILE with these faults and no expectations, written apart as `tag`.
inline fs::path fault_variant(const std::string& file, const nlohmann::json& faults, const std::string& tag) {
    const fs::path source = kSourceDir / "scenarios" / file;
    nlohmann::json doc = read_json(source);
    doc.erase("expect");
    doc["faults"] = faults;
    return relocated_copy(source, doc, tag);
}

// The report.json of a run of `file` under `policy`, which exits 0 or 1 (expectations aside).
inline nlohmann::json policy_report(const fs::path& file, const std::string& policy) {
    const Outcome o = kvcheck({"run", file.string(), "--policy", policy, "--json", "--quiet"});
    EXPECT_TRUE(o.code == 0 || o.code == 1) << o.all();
    return nlohmann::json::parse(o.out);
}

}  // namespace
