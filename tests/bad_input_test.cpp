// The bad-input corpus (tests/bad_input/cases.json): every malformed scenario, trace and command line
// goes through the real kvcheck binary and must exit 2 with exactly one stderr line
// `kvcheck: FILE:PLACE: message`, never crash, and leave nothing behind in the --out folder.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

// GCC 12 with -fsanitize=address reports a false -Wmaybe-uninitialized inside <regex>'s automaton.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/io/suggest.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kTimeoutSeconds = 120;  // generous: the ASan build runs the same corpus

const std::string kSourceDir = KVCHECK_SOURCE_DIR;
const std::string kCorpusDir = "tests/bad_input";  // relative to the source folder, where cases run

nlohmann::json load_corpus() {
    std::ifstream in(kSourceDir + "/" + kCorpusDir + "/cases.json");
    if (!in) return nlohmann::json::object();
    return nlohmann::json::parse(in);
}

const nlohmann::json& corpus() {
    static const nlohmann::json doc = load_corpus();
    return doc;
}

// A fresh, empty folder that is removed again when the test ends.
class TempDir {
public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "kvcheck-bad-input-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Outcome {
    bool exited = false;  // false: killed by a signal (a crash) or by the timeout
    int code = -1;        // exit code, or the signal number when !exited
    bool timed_out = false;
    std::string out;
    std::string err;
};

// Runs kvcheck with `args` in the source folder; stdout and stderr go to files in `scratch`.
Outcome run_kvcheck(const std::vector<std::string>& args, const std::string& scratch) {
    const std::string out_path = scratch + "/stdout";
    const std::string err_path = scratch + "/stderr";
    std::vector<std::string> owned = {KVCHECK_BINARY};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : owned) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Everything the child touches is prepared before fork: only async-signal-safe calls follow.
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (out_fd < 0 || err_fd < 0 || null_fd < 0 || ::chdir(kSourceDir.c_str()) != 0) ::_exit(126);
        ::dup2(null_fd, 0);
        ::dup2(out_fd, 1);
        ::dup2(err_fd, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    Outcome o;
    if (pid < 0) return o;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutSeconds);
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return o;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            o.timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    o.exited = WIFEXITED(status);
    o.code = o.exited ? WEXITSTATUS(status) : WTERMSIG(status);
    o.out = read_text(out_path);
    o.err = read_text(err_path);
    return o;
}

std::vector<std::string> expand_args(const nlohmann::json& args, const std::string& out_dir) {
    std::vector<std::string> out;
    for (const nlohmann::json& a : args)
        out.push_back(replace_all(replace_all(a.get<std::string>(), "{dir}", kCorpusDir), "{out}", out_dir));
    return out;
}

std::string regex_escape(const std::string& text) {
    static const std::string special = R"(.^$|?*+()[]{}\)";
    std::string out;
    for (char c : text) {
        if (special.find(c) != std::string::npos) out += '\\';
        out += c;
    }
    return out;
}

// Everything under `dir`, relative to it, for "left behind" messages.
std::vector<std::string> entries_under(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out.push_back(fs::relative(it->path(), dir).string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
}

std::string command_line(const std::vector<std::string>& args) {
    std::string out = "kvcheck";
    for (const std::string& a : args) out += " " + a;
    return out;
}

std::string test_name(const nlohmann::json& c) {
    std::string name = c.at("name").get<std::string>();
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return name;
}

std::vector<nlohmann::json> list(const char* key) {
    std::vector<nlohmann::json> out;
    if (corpus().contains(key))
        for (const nlohmann::json& c : corpus().at(key)) out.push_back(c);
    return out;
}

class BadInput : public ::testing::TestWithParam<nlohmann::json> {};

// One malformed input: exit 2, one line naming the file, the place and what was expected, no output.
TEST_P(BadInput, ExitsTwoWithOneLineAndLeavesNothing) {
    const nlohmann::json& c = GetParam();
    TempDir out_dir;
    TempDir scratch;
    const std::vector<std::string> args = expand_args(c.at("args"), out_dir.path());
    const std::string command = command_line(args);
    const Outcome o = run_kvcheck(args, scratch.path());
    ASSERT_FALSE(o.timed_out) << command << "\nran past " << kTimeoutSeconds << " s";
    ASSERT_TRUE(o.exited) << command << "\ncrashed with signal " << o.code << "\nstderr:\n" << o.err;
    EXPECT_EQ(o.code, 2) << command << "\nstderr:\n" << o.err;

    ASSERT_FALSE(o.err.empty()) << command << "\nprinted nothing on stderr";
    EXPECT_EQ(o.err.back(), '\n') << command << "\nstderr does not end its line:\n" << o.err;
    const std::string line = o.err.back() == '\n' ? o.err.substr(0, o.err.size() - 1) : o.err;
    EXPECT_EQ(line.find('\n'), std::string::npos) << command << "\nexpected exactly one stderr line, got:\n" << o.err;

    const std::string file = replace_all(c.at("expect_file").get<std::string>(), "{dir}", kCorpusDir);
    const std::string place = c.at("expect_place_regex").get<std::string>();
    const std::string message = c.at("expect_message_regex").get<std::string>();
    // A whole-file problem (missing, a folder, no requests) has no place: "kvcheck: FILE: message".
    const std::string shape = "kvcheck: " + regex_escape(file) + (place.empty() ? "" : ":(" + place + ")") + ": (.*)";
    std::smatch parts;
    ASSERT_TRUE(std::regex_match(line, parts, std::regex(shape)))
        << command << "\nexpected kvcheck: " << file << (place.empty() ? "" : ":" + place) << ": ...\ngot      "
        << line;
    const std::string said = parts[parts.size() - 1].str();
    EXPECT_TRUE(std::regex_search(said, std::regex(message)))
        << command << "\nmessage \"" << said << "\" does not match /" << message << "/";

    EXPECT_TRUE(entries_under(out_dir.path()).empty())
        << command << "\nleft behind in the output folder: " << join(entries_under(out_dir.path()));
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInput, ::testing::ValuesIn(list("cases")),
                         [](const ::testing::TestParamInfo<nlohmann::json>& case_info) {
                             return test_name(case_info.param);
                         });

class BadInputControl : public ::testing::TestWithParam<nlohmann::json> {};

// The harness itself: a good input through the same path succeeds and writes what it should, so a
// passing bad case is not an artefact of the way cases are run.
TEST_P(BadInputControl, GoodInputSucceeds) {
    const nlohmann::json& c = GetParam();
    TempDir out_dir;
    TempDir scratch;
    const std::vector<std::string> args = expand_args(c.at("args"), out_dir.path());
    const Outcome o = run_kvcheck(args, scratch.path());
    ASSERT_TRUE(o.exited && !o.timed_out) << command_line(args) << "\nstderr:\n" << o.err;
    EXPECT_EQ(o.code, c.at("expect_exit").get<int>()) << command_line(args) << "\nstderr:\n" << o.err;
    std::set<std::string> expected;
    for (const nlohmann::json& f : c.at("expect_created")) {
        expected.insert(f.get<std::string>());
        EXPECT_TRUE(fs::is_regular_file(out_dir.path() + "/" + f.get<std::string>()))
            << command_line(args) << "\ndid not write " << f;
    }
    for (const std::string& e : entries_under(out_dir.path())) {
        if (fs::is_directory(out_dir.path() + "/" + e)) continue;
        EXPECT_EQ(expected.count(e), 1u) << command_line(args) << "\nunexpected file " << e;
    }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputControl, ::testing::ValuesIn(list("controls")),
                         [](const ::testing::TestParamInfo<nlohmann::json>& case_info) {
                             return test_name(case_info.param);
                         });

// The corpus is big enough, names are unique, and every input file in it is used by some case
// (a file nobody runs is a case someone meant to add).
TEST(BadInputCorpus, EveryFileIsUsedAndNamesAreUnique) {
    const std::vector<nlohmann::json> cases = list("cases");
    ASSERT_GE(cases.size(), 40u) << "tests/bad_input/cases.json is missing or too small";
    std::set<std::string> names;
    std::string all_args;
    for (const char* key : {"cases", "controls"})
        for (const nlohmann::json& c : list(key)) {
            EXPECT_TRUE(names.insert(test_name(c)).second) << "duplicate case name " << c.at("name");
            for (const nlohmann::json& a : c.at("args"))
                all_args += replace_all(a.get<std::string>(), "{dir}", kCorpusDir) + "\n";
            all_args += replace_all(c.value("expect_file", ""), "{dir}", kCorpusDir) + "\n";
        }
    // A scenario can reach a trace through its "trace" key, so scenario texts count as users too.
    for (const auto& entry : fs::directory_iterator(kSourceDir + "/" + kCorpusDir + "/scenarios"))
        if (all_args.find(kCorpusDir + "/scenarios/" + entry.path().filename().string()) != std::string::npos)
            all_args += read_text(entry.path().string());
    all_args += read_text(kSourceDir + "/" + kCorpusDir + "/good/base.json");
    for (const char* folder : {"scenarios", "traces", "good", "results", "schedules", "reports"})
        for (const auto& entry : fs::directory_iterator(kSourceDir + "/" + kCorpusDir + "/" + folder)) {
            const std::string name = entry.path().filename().string();
            const bool used = all_args.find(kCorpusDir + "/" + folder + "/" + name) != std::string::npos ||
                              all_args.find("../" + std::string(folder) + "/" + name) != std::string::npos;
            EXPECT_TRUE(used) << kCorpusDir << "/" << folder << "/" << name << " is not used by any case";
        }
}

// A scenario that cannot be read (permissions) fails like any other bad input. Root reads every
// file regardless of its mode, so the test says so and skips there.
TEST(BadInputCorpus, UnreadableScenarioExitsTwo) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root: a mode-000 file is still readable";
    TempDir dir;
    TempDir scratch;
    const std::string path = dir.path() + "/unreadable.json";
    std::ofstream(path) << "{}\n";
    ASSERT_EQ(::chmod(path.c_str(), 0), 0);
    const Outcome o = run_kvcheck({"run", path, "--out", dir.path() + "/run"}, scratch.path());
    ASSERT_TRUE(o.exited) << o.err;
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_TRUE(std::regex_match(o.err, std::regex("kvcheck: " + regex_escape(path) + ": cannot read: .*\n"))) << o.err;
    EXPECT_FALSE(fs::exists(dir.path() + "/run"));
}

// A FIFO where a file is expected would block the reader forever; every reader refuses it at once.
TEST(BadInputCorpus, FifoInsteadOfAFileExitsTwo) {
    TempDir dir;
    TempDir scratch;
    const std::string fifo = dir.path() + "/fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    const std::string scenario = dir.path() + "/fifo-trace.json";
    std::ofstream(scenario) << R"({"model": "toy", "workload": {"trace": "fifo"}})"
                            << "\n";
    const std::vector<std::pair<std::vector<std::string>, std::string>> commands = {
        {{"validate", fifo}, fifo},
        {{"trace", "stats", fifo}, fifo},
        {{"run", scenario, "--out", dir.path() + "/run"}, scenario + ":/workload/trace: trace file " + fifo},
        {{"merge", fifo}, fifo},
    };
    for (const auto& [args, place] : commands) {
        const Outcome o = run_kvcheck(args, scratch.path());
        ASSERT_FALSE(o.timed_out) << command_line(args) << " blocked on the FIFO";
        ASSERT_TRUE(o.exited) << o.err;
        EXPECT_EQ(o.code, 2) << command_line(args) << "\n" << o.err;
        EXPECT_TRUE(
            std::regex_match(o.err, std::regex("kvcheck: " + regex_escape(place) + ":? is not a regular file .*\n")))
            << o.err;
    }
    EXPECT_FALSE(fs::exists(dir.path() + "/run"));
}

// A replay of an empty folder confirms nothing, so it is bad input like a run of an empty folder.
TEST(BadInputCorpus, EmptyScheduleFolderExitsTwo) {
    TempDir dir;
    TempDir scratch;
    const Outcome o = run_kvcheck({"replay", dir.path(), "--backend", "cpu"}, scratch.path());
    ASSERT_TRUE(o.exited) << o.err;
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_TRUE(std::regex_match(
        o.err, std::regex("kvcheck: " + regex_escape(dir.path()) + ": no \\*\\.json schedules in this folder\n")))
        << o.err;
}

// Bytes that are not UTF-8, copied from an argument into the message, are written as \xNN; valid
// UTF-8 (here "é") is kept as it is, so the line stays readable text.
TEST(BadInputCorpus, BytesThatAreNotUtf8AreEscaped) {
    TempDir scratch;
    const Outcome o = run_kvcheck(
        {"run", kSourceDir + "/scenarios/quickstart.json", "--policy", "na\xFFive\xC3\xA9\xE2\x82"}, scratch.path());
    ASSERT_TRUE(o.exited) << o.err;
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_NE(o.err.find("unknown policy \"na\\xFFive\xC3\xA9\\xE2\\x82\""), std::string::npos) << o.err;
}

// A --set that is not UTF-8 is refused before the run: its text goes into report.json and the
// reproduce line, which are UTF-8 (JSON cannot hold the byte), so the run would fail at the end.
TEST(BadInputCorpus, SetThatIsNotUtf8ExitsTwoBeforeTheRun) {
    TempDir scratch;
    for (const char* command : {"run", "compare", "validate"}) {
        const Outcome o = run_kvcheck(
            {command, kSourceDir + "/" + kCorpusDir + "/good/base.json", "--set", "/name=b\xFFx"}, scratch.path());
        ASSERT_TRUE(o.exited) << o.err;
        EXPECT_EQ(o.code, 2) << command << "\n" << o.err;
        EXPECT_EQ(
            o.err,
            "kvcheck: <input>:--set: expected UTF-8 text, got a byte that is not UTF-8 in \"/name=b\xEF\xBF\xBDx\"\n")
            << command;
        EXPECT_EQ(o.out.find("seed="), std::string::npos) << command << ": refused before the run\n" << o.out;
    }
}

}  // namespace

// Hostile shapes too large to keep as corpus files, written here: JSON nested 200,000 levels deep
// (400 KB) in every kind of file kvcheck reads. Each reader refuses it at the bracket that opens
// level 513, before a recursive copy, dump or comparison could overflow the stack.
TEST(BadInputCorpus, DeepNestingIsRefusedByEveryReader) {
    TempDir dir;
    TempDir scratch;
    const std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
    const auto write = [&](const std::string& name, const std::string& text) {
        const std::string path = dir.path() + "/" + name;
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path) << text;
        return path;
    };
    const std::string head = R"({"model": "toy", "workload": {"requests": [{"input_tokens": 16}]}, )";
    const std::string scenario = write("scenario.json", head + R"("expect": {"*": {"violates": )" + deep + "}}}");
    const std::string value = write("value.json", deep);
    const std::string trace =
        write("trace.jsonl",
              R"({"timestamp": 0, "input_length": 16, "output_length": 1, "hash_ids": [1], "x": )" + deep + "}\n");
    const std::string report = write("run/report.json", "{\"scenario\": " + deep + "}");
    // Each command and the start of its line, as a regex.
    const auto at = [](const std::string& file) { return regex_escape(file) + ":1:[0-9]+: "; };
    const std::vector<std::pair<std::vector<std::string>, std::string>> commands = {
        {{"validate", scenario}, at(scenario)},
        {{"run", scenario, "--out", dir.path() + "/out"}, at(scenario)},
        {{"trace", "stats", trace}, at(trace)},
        {{"replay", value}, at(value)},
        {{"merge", value}, at(value)},
        {{"report", dir.path() + "/run", "-o", dir.path() + "/page.html"}, at(report)},
        // An argument is at most 128 KiB (MAX_ARG_STRLEN): 60,000 levels.
        {{"run", scenario, "--set", "/name=" + std::string(60'000, '[') + std::string(60'000, ']')},
         "<input>:--set: /name: "},
    };
    for (const auto& [args, start] : commands) {
        const Outcome o = run_kvcheck(args, scratch.path());
        ASSERT_TRUE(o.exited) << args[0] << " crashed with signal " << o.code;
        EXPECT_EQ(o.code, 2) << args[0] << "\n" << o.err;
        EXPECT_TRUE(std::regex_match(o.err, std::regex("kvcheck: " + start + "JSON nested deeper than 512 levels.*\n")))
            << args[0] << ": " << o.err.substr(0, 300);
    }
    EXPECT_FALSE(fs::exists(dir.path() + "/out"));
    EXPECT_FALSE(fs::exists(dir.path() + "/page.html"));
}

// A message that quotes a huge user value (a 1 MB key, also in the JSON pointer) stays one short
// line that keeps the start and the end of what it says.
TEST(BadInputCorpus, HugeEchoedValuesAreCut) {
    TempDir dir;
    TempDir scratch;
    const std::string path = dir.path() + "/huge-key.json";
    std::ofstream(path) << R"({"model": "toy", "workload": {"requests": [{"input_tokens": 16}]}, ")"
                        << std::string(1'000'000, 'k') << "\": 1}";
    const Outcome o = run_kvcheck({"validate", path}, scratch.path());
    ASSERT_TRUE(o.exited);
    EXPECT_EQ(o.code, 2);
    EXPECT_LT(o.err.size(), 1'500u);
    EXPECT_TRUE(std::regex_match(o.err, std::regex("kvcheck: " + regex_escape(path) +
                                                   ":/k+\\.\\.\\.\\([0-9]+ bytes cut\\)\\.\\.\\.k+: unknown key .*\n")))
        << o.err.substr(0, 400);
}

// A symbolic-link loop and a dangling link are named as such, not as a missing file.
TEST(BadInputCorpus, SymlinkLoopsAndDanglingLinksAreNamed) {
    TempDir dir;
    TempDir scratch;
    const std::string a = dir.path() + "/a.json";
    const std::string b = dir.path() + "/b.json";
    const std::string dangling = dir.path() + "/dangling.json";
    fs::create_symlink(b, a);
    fs::create_symlink(a, b);
    fs::create_symlink(dir.path() + "/nowhere.json", dangling);
    for (const char* command : {"validate", "replay"}) {
        Outcome o = run_kvcheck({command, a}, scratch.path());
        EXPECT_EQ(o.code, 2) << o.err;
        EXPECT_EQ(o.err,
                  "kvcheck: " + a + ": is a loop of symbolic links (each points on to the next), expected a file\n");
        o = run_kvcheck({command, dangling}, scratch.path());
        EXPECT_EQ(o.code, 2) << o.err;
        EXPECT_EQ(o.err, "kvcheck: " + dangling + ": is a symbolic link to " + dir.path() +
                             "/nowhere.json, which does not exist\n");
    }
    const Outcome o = run_kvcheck({"trace", "stats", a}, scratch.path());
    EXPECT_EQ(o.code, 2) << o.err;
    EXPECT_NE(o.err.find("is a loop of symbolic links"), std::string::npos) << o.err;
}

// Proves: a near miss finds the name meant (a typo, a swap of neighbours, a letter missing or
// extra, in any case), and a word that is no near miss finds nothing rather than a wild guess.
TEST(DidYouMean, NearMissesOnlyAndTheNearest) {
    const std::vector<std::string> names = {"validated", "naive", "no-pin", "no-revalidate", "run", "report"};
    EXPECT_EQ(kvcheck::sim::nearest_name("vaildated", names), "validated");  // neighbours swapped
    EXPECT_EQ(kvcheck::sim::nearest_name("VALIDATE", names), "validated");
    EXPECT_EQ(kvcheck::sim::nearest_name("no-pn", names), "no-pin");
    EXPECT_EQ(kvcheck::sim::nearest_name("rn", names), "run");
    EXPECT_EQ(kvcheck::sim::nearest_name("reprot", names), "report");
    EXPECT_EQ(kvcheck::sim::nearest_name("frobnicate", names), "");
    EXPECT_EQ(kvcheck::sim::nearest_name("x", names), "");
    EXPECT_EQ(kvcheck::sim::nearest_name(std::string(10000, 'a'), names), "");
    EXPECT_EQ(kvcheck::sim::did_you_mean("naiv", names), "; did you mean \"naive\"?");
}
