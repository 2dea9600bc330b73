// kvcheck entry point: builds the subcommands, runs the chosen one, maps errors to exit codes.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <new>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <malloc.h>

#include "sim/io/input_error.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/io/suggest.hpp"
#include "sim/io/version.hpp"
#include "sim/run/suite.hpp"
#include "tools/cli/commands.hpp"

namespace {

// CLI11 reads numbers leniently: "-1" as 2^64 - 1 for an unsigned option, an overflowing count as
// the largest one, "010" as octal, "nan" and "inf" as reals. So every option is checked before
// CLI11 converts it: a count is plain decimal that fits in 64 bits, a real number is finite and
// not negative, and text is not empty. (The validators have no description: --help is unchanged.)
// `least` and `most` bound the values the option takes, as its --help shows them.
std::string count_problem(std::string& text, const std::string& least, const std::string& most) {
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || text.front() < '0' || text.front() > '9' || stop != end)
        return "expected a whole number of " + least + " or more in decimal, got \"" + text + "\"";
    if (error == std::errc::result_out_of_range) return "\"" + text + "\" is too large (at most " + most + ")";
    text = std::to_string(value);  // CLI11 would read leading zeros as octal
    return "";
}

std::string real_problem(const std::string& text) {
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || stop != end || error != std::errc() || !std::isfinite(value) || value < 0)
        return "expected a finite number of 0 or more, got \"" + text + "\"";
    return "";
}

// The bounds of an option's range check ("UINT:UINT in [1 - 256]" gives 1 and 256); 0 and
// 2^64 - 1 for a count without one.
std::pair<std::string, std::string> count_bounds(const std::string& type) {
    static const std::regex kRange(R"( in \[([0-9]+) - ([0-9]+)\])");
    std::smatch m;
    if (std::regex_search(type, m, kRange)) return {m[1].str(), m[2].str()};
    return {"0", std::to_string(UINT64_MAX)};
}

void check_values(CLI::App& app) {
    const CLI::Validator real([](std::string& text) { return real_problem(text); }, "", "real");
    const CLI::Validator text(
        [](std::string& value) { return value.empty() ? std::string("expected a value, got \"\"") : std::string(); },
        "", "text");
    for (CLI::Option* option : app.get_options()) {
        const std::string type = option->get_type_name();
        if (type.rfind("UINT", 0) == 0 || type.rfind("INT", 0) == 0)  // no option takes a negative value
            option->transform(
                CLI::Validator([bounds = count_bounds(type)](
                                   std::string& value) { return count_problem(value, bounds.first, bounds.second); },
                               "", "count"));
        else if (type.rfind("FLOAT", 0) == 0)
            option->transform(real);
        else if (type.rfind("TEXT", 0) == 0)
            option->transform(text);
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_values(*sub);
}

// A command-line error as one line, `kvcheck: <input>:--option: what was wrong`: the place is the
// option CLI11's message names first.
// CLI11's own phrasing of two common mistakes, said as the rest of kvcheck says them: a value not
// among the choices (with the nearest one), and an option given without its value.
std::string plain_words(const std::string& what) {
    static const std::regex kNotIn("^(.*) not in \\{(.*)\\}$");
    static const std::regex kMissing("^[0-9]+ required [A-Z]+ missing$");
    std::smatch m;
    if (std::regex_match(what, m, kNotIn)) {
        std::vector<std::string> choices;
        std::string list;
        std::stringstream parts(m[2].str());
        for (std::string c; std::getline(parts, c, ',');) {
            choices.push_back(c);
            list += (list.empty() ? "" : ", ") + c;
        }
        return "unknown value \"" + m[1].str() + "\"" + kvcheck::sim::did_you_mean(m[1].str(), choices) +
               " (expected one of " + list + ")";
    }
    if (std::regex_match(what, kMissing)) return "expects a value after it";
    return what;
}

std::string command_line_error(const std::string& what) {
    static const std::regex kNamed("^(--?[A-Za-z][A-Za-z0-9-]*): (.*)$");
    static const std::regex kMentioned("(--[A-Za-z][A-Za-z0-9-]*)");
    std::smatch m;
    if (std::regex_match(what, m, kNamed))
        return kvcheck::sim::InputError("", m[1], plain_words(m[2]) + " (see --help)").what();
    if (std::regex_search(what, m, kMentioned))
        return kvcheck::sim::InputError("", m[1], what + " (see --help)").what();
    return kvcheck::sim::InputError("", "command line", what + " (see --help)").what();
}

// The innermost command the words named (the app itself when they named none).
CLI::App& innermost_command(CLI::App& app) {
    CLI::App* at = &app;
    while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
    return *at;
}

// CLI11 reports a word that names no command as a missing command; this names the word and the
// commands there are instead. Empty when the words left are no such case.
std::string unknown_command(CLI::App& app) {
    CLI::App* at = &innermost_command(app);
    const std::vector<std::string> rest = at->remaining();
    if (rest.empty() || rest.front().starts_with("-") || at->get_subcommands({}).empty()) return "";
    std::string known;
    std::vector<std::string> names;
    for (const CLI::App* sub : at->get_subcommands({})) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        names.push_back(sub->get_name());
    }
    return kvcheck::sim::InputError("", "command line",
                                    "unknown command \"" + rest.front() + "\"" +
                                        kvcheck::sim::did_you_mean(rest.front(), names) + " (known: " + known + ")")
        .what();
}

// The command's name as typed: "kvcheck trace stats".
std::string command_path(const CLI::App& at) {
    std::string path = at.get_name();
    for (const CLI::App* up = at.get_parent(); up != nullptr; up = up->get_parent())
        path =
            (up->get_parent() == nullptr ? std::string("kvcheck") : up->get_name()) + (path.empty() ? "" : " ") + path;
    return path.empty() ? "kvcheck" : path;
}

// CLI11 checks required arguments before it reports words it did not expect, so `run --bogus`
// would say the scenario is missing; this names the first unexpected option instead, and the
// option of the command it most likely meant. Empty when no option was left over.
std::string unexpected_option(CLI::App& app) {
    const CLI::App& at = innermost_command(app);
    std::vector<std::string> names;
    for (const CLI::Option* option : at.get_options()) {
        for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
        for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    }
    for (const std::string& word : at.remaining())
        if (word.size() > 1 && word.starts_with("-")) {
            const std::string option = word.substr(0, word.find('='));
            return kvcheck::sim::InputError("", option,
                                            "unknown option \"" + option + "\" for " + command_path(at) +
                                                kvcheck::sim::did_you_mean(option, names) + " (see " +
                                                command_path(at) + " --help)")
                .what();
        }
    return "";
}

// A replay grows its tables (state table, disk copies, prefix index, timeline) by reallocation,
// and page faults on fresh memory cost as much as a fifth of a run (docs/performance.md). glibc
// maps every block over 128 KiB afresh and returns freed memory at the top of the heap, so each
// grown table and each later run of the same process (bench repeats, suites, compare) faults
// again. Served from the heap and kept there, freed buffers are reused instead.
void keep_freed_memory() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: blocks above it are still mapped afresh
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// Whatever a command printed must have reached stdout (a full disk, a closed descriptor); says
// so on stderr when it did not.
bool stdout_written() {
    std::cout.flush();
    if (std::cout && std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return true;
    std::fprintf(stderr, "kvcheck: %s\n", kvcheck::sim::InputError("<stdout>", "", "write failed").what());
    return false;
}

// A `run` refused before its suite starts (a bad flag value, an unknown policy) writes no JUnit
// file; one an earlier run left saying pass must not stay for CI to read as this run's.
void drop_passing_junit(int argc, char** argv) {
    if (argc < 2 || std::string_view(argv[1]) != "run") return;
    for (int i = 2; i < argc; ++i) {
        const std::string_view word = argv[i];
        if (word == "--junit" && i + 1 < argc) kvcheck::sim::remove_passing_junit(argv[i + 1]);
        if (word.starts_with("--junit=")) kvcheck::sim::remove_passing_junit(std::string(word.substr(8)));
    }
}

// Exit codes (README, *Exit codes*): 0 held, 1 a violation or failed expectation, 2 bad input,
// 3 an internal error, 130 stopped by a signal before it found anything.
constexpr int kInternalError = 3;

}  // namespace

int main(int argc, char** argv) {
    keep_freed_memory();
    if (argc > 0) kvcheck::sim::set_kvcheck_command(argv[0]);
    CLI::App app{"kvcheck: simulator and model checker for hybrid-attention prefix/KV cache managers"};
    app.set_version_flag("--version", kvcheck::sim::kvcheck_version_line());
    app.require_subcommand(1);
    kvcheck::cli::Common common;
    kvcheck::cli::register_run(app, common);
    kvcheck::cli::register_compare(app, common);
    kvcheck::cli::register_validate(app, common);
    kvcheck::cli::register_check(app, common);
    kvcheck::cli::register_fuzz(app, common);
    kvcheck::cli::register_merge(app, common);
    kvcheck::cli::register_mutants(app, common);
    kvcheck::cli::register_report(app, common);
    kvcheck::cli::register_presets(app, common);
    kvcheck::cli::register_policies(app, common);
    kvcheck::cli::register_replay(app, common);
    kvcheck::cli::register_trace(app, common);
    kvcheck::cli::register_bench(app, common);
    check_values(app);
    // `--version` is a common flag: every command takes it, as the top level does.
    const std::function<void(CLI::App*)> versioned = [&](CLI::App* cmd) {
        for (CLI::App* sub : cmd->get_subcommands({})) {
            sub->set_version_flag("--version", kvcheck::sim::kvcheck_version_line());
            versioned(sub);
        }
    };
    versioned(&app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {  // --help, --version
            const int code = app.exit(e);
            return stdout_written() ? code : 2;
        }
        std::string unknown = unknown_command(app);
        if (unknown.empty() && (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr ||
                                dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr))
            unknown = unexpected_option(app);
        std::fprintf(stderr, "kvcheck: %s\n", (unknown.empty() ? command_line_error(e.what()) : unknown).c_str());
        drop_passing_junit(argc, argv);
        return 2;
    } catch (const kvcheck::sim::InputError& e) {
        std::fprintf(stderr, "kvcheck: %s\n", e.what());
        drop_passing_junit(argc, argv);
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "kvcheck: internal error: out of memory (exit %d)\n", kInternalError);
        return kInternalError;
    } catch (const std::exception& e) {
        // Not the input's fault as far as kvcheck can tell (a filesystem or library error): a
        // code of its own, so a CI job tells it from a bad scenario.
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        std::fprintf(stderr, "kvcheck: internal error: %s (exit %d)\n", what.c_str(), kInternalError);
        return kInternalError;
    }
    return stdout_written() ? common.exit_code : 2;
}
