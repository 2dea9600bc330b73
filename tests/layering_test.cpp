// The layers of docs/architecture.md, read from the sources: every project include points at the
// file's own layer or one below it, and the model includes nothing that reaches clocks, files,
// threads or the operating system. CMake's PRIVATE links say the same at link time; this test
// says it for headers too, where a wrong include would otherwise compile silently.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

// Layer -> the layers its sources may include (itself included).
const std::map<std::string, std::set<std::string>>& allowed() {
    static const std::map<std::string, std::set<std::string>> layers = [] {
        std::map<std::string, std::set<std::string>> m;
        m["model"] = {"model"};
        m["sim/io"] = {"model", "sim/io"};
        m["sim/format"] = {"model", "sim/io", "sim/format"};
        m["sim/workload"] = {"model", "sim/io", "sim/workload"};
        m["sim/check"] = {"model", "sim/io", "sim/check"};
        m["sim/report"] = {"model", "sim/io", "sim/report"};
        m["sim/scenario"] = {"model", "sim/io", "sim/workload", "sim/check", "sim/report", "sim/scenario"};
        m["sim/des"] = m["sim/scenario"];
        m["sim/des"].insert({"sim/format", "sim/des"});
        m["cuda_replay"] = {"model", "sim/io", "sim/format", "cuda_replay"};
        m["sim/run"] = m["sim/des"];
        m["sim/run"].insert({"cuda_replay", "sim/run"});
        return m;
    }();
    return layers;
}

std::string layer_of(const std::string& relative) {
    const std::size_t slash = relative.find('/');
    if (relative.starts_with("sim/")) return relative.substr(0, relative.find('/', slash + 1));
    return relative.substr(0, slash);
}

std::vector<std::string> sources_under(const std::string& dir) {
    std::vector<std::string> out;
    const fs::path root = fs::path(KVCHECK_SOURCE_DIR) / dir;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        const std::string ext = entry.path().extension().string();
        if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".cu"))
            out.push_back(fs::relative(entry.path(), KVCHECK_SOURCE_DIR).string());
    }
    return out;
}

std::vector<std::string> includes(const std::string& relative, const std::regex& pattern) {
    std::ifstream in(fs::path(KVCHECK_SOURCE_DIR) / relative);
    std::vector<std::string> out;
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, pattern)) out.push_back(m[1]);
    return out;
}

// Every file of every layer includes only the layers below it (and its own).
TEST(Layering, IncludesPointDownwards) {
    const std::regex project(R"(^\s*#\s*include\s+"([^"]+)\")");
    int files = 0;
    for (const char* dir : {"model", "sim", "cuda_replay"}) {
        for (const std::string& file : sources_under(dir)) {
            const std::string layer = layer_of(file);
            const auto it = allowed().find(layer);
            ASSERT_NE(it, allowed().end()) << file << " is in no layer of docs/architecture.md";
            for (const std::string& inc : includes(file, project))
                EXPECT_TRUE(it->second.count(layer_of(inc)) == 1)
                    << file << " (layer " << layer << ") includes " << inc;
            ++files;
        }
    }
    EXPECT_GT(files, 100);
}

// The model is pure: no clocks, files, threads, randomness from the library or system calls. The
// one exception is written down here with its reason.
TEST(Layering, ModelIncludesNoSystemFacilities) {
    const std::regex system(R"(^\s*#\s*include\s+<([^>]+)>)");
    const std::set<std::string> forbidden = {"thread",     "chrono",   "fstream", "random",
                                             "filesystem", "mutex",    "atomic",  "condition_variable",
                                             "future",     "iostream", "ctime"};
    // table_allocator.hpp hints that the state table's large arrays take transparent huge pages
    // (madvise), so a trace replay faults once per 2 MiB instead of once per 4 KiB; a hint that
    // changes no value, reads no file or clock and may fail without effect.
    const std::set<std::pair<std::string, std::string>> exceptions = {{"model/table_allocator.hpp", "sys/mman.h"}};
    for (const std::string& file : sources_under("model")) {
        for (const std::string& inc : includes(file, system)) {
            if (exceptions.count({file, inc}) != 0) continue;
            EXPECT_TRUE(forbidden.count(inc) == 0 && !inc.starts_with("sys/")) << file << " includes <" << inc << ">";
        }
    }
}

// The model keeps no hidden per-thread state: scratch space is a context its callers pass.
TEST(Layering, ModelHasNoThreadLocalState) {
    for (const std::string& file : sources_under("model")) {
        std::ifstream in(fs::path(KVCHECK_SOURCE_DIR) / file);
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            EXPECT_EQ(line.find("thread_local"), std::string::npos) << file << ":" << number << ": " << line;
        }
    }
}

}  // namespace
