// `kvcheck replay DIR --backend cpu|cuda`: replays every *.json schedule in DIR (or one file) with
// the tiny model, compares resumed against recomputed outputs bit for bit, and checks the
// simulator's oracle: exit 0 when every divergence matches it, 1 otherwise, 2 on bad input.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda_replay/replay.hpp"
#include "cuda_replay/replay_many.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/shell_word.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/progress.hpp"

namespace kvcheck::cli {

namespace {

struct ReplayOptions {
    std::string path;
    std::string backend = "cpu";
    bool json = false;
    std::string out;  // write replay.json here too
    int limit = -1;
    int jobs = -1;  // -1: 2 on the CPU backend, 1 on CUDA
    bool no_graph_guard = false;
};

void print_table(const replay::Summary& summary, const std::string& backend, bool graph_guard) {
    std::printf("%-32s %8s  %-9s  %-10s %-18s %8s  %-7s  %s\n", "schedule", "request", "verdict", "group", "form",
                "position", "oracle", "agreement");
    for (const replay::ScheduleResult& r : summary.results) {
        const std::string name = std::filesystem::path(r.schedule).filename().string();
        const replay::Divergence* d = r.divergence ? &*r.divergence : nullptr;
        std::printf("%-32s %8lld  %-9s  %-10s %-18s %8s  %-7s  %s\n", name.c_str(), static_cast<long long>(r.request),
                    r.bit_exact ? "bit-exact" : "diverged", d ? d->group_name.c_str() : "-", d ? d->form.c_str() : "-",
                    d ? std::to_string(d->position).c_str() : "-", r.oracle_corrupt ? "corrupt" : "clean",
                    std::string(replay::agreement_name(r.agreement)).c_str());
    }
    std::printf(
        "backend=%s%s schedules=%d bit_exact=%d diverged=%d oracle: agree=%d false_alarm=%d miss=%d recaptures=%d\n",
        backend.c_str(), graph_guard ? "" : " graph_guard=off", summary.schedules, summary.bit_exact, summary.diverged,
        summary.agree, summary.false_alarm, summary.miss, summary.recaptures);
}

// A replay of many schedules takes minutes: a live line on a terminal, and elsewhere (a CI log) a
// plain line every 10 s, each with the counts so far, so a disagreement shows before the end.
class RunningSummary {
public:
    explicit RunningSummary(std::size_t total)
        : total_(total), progress_(std::make_shared<Progress>(false, "replay")),
          last_(std::chrono::steady_clock::now()), started_(last_) {}

    void operator()(const replay::ScheduleResult& r) {
        ++done_;
        (r.bit_exact ? bit_exact_ : diverged_) += 1;
        if (r.agreement != replay::Agreement::agree) ++disagree_;
        const std::string counts = "of " + std::to_string(total_) + " schedules, bit_exact " +
                                   std::to_string(bit_exact_) + " diverged " + std::to_string(diverged_) +
                                   " oracle disagreements " + std::to_string(disagree_);
        progress_->update(done_, total_, counts);
        const auto now = std::chrono::steady_clock::now();
        if (::isatty(STDERR_FILENO) == 1 || now - last_ < std::chrono::seconds(10) || done_ == total_) return;
        last_ = now;
        std::fprintf(stderr, "replay: %llu %s after %.0f s\n", static_cast<unsigned long long>(done_), counts.c_str(),
                     std::chrono::duration<double>(now - started_).count());
    }

private:
    std::size_t total_;
    std::size_t done_ = 0;
    std::size_t bit_exact_ = 0;
    std::size_t diverged_ = 0;
    std::size_t disagree_ = 0;
    std::shared_ptr<Progress> progress_;  // shared: std::function copies its target
    std::chrono::steady_clock::time_point last_;
    std::chrono::steady_clock::time_point started_;
};

int run_replay(const ReplayOptions& options) {
    if (options.no_graph_guard && options.backend != "cuda")
        throw sim::InputError("", "--no-graph-guard",
                              "needs --backend cuda: the " + options.backend + " backend captures no decode graphs");
    std::string why;
    const std::unique_ptr<replay::Backend> backend =
        replay::make_backend(options.backend, why, {.graph_guard = !options.no_graph_guard});
    if (!backend) throw sim::InputError("", "--backend", options.backend + ": " + why);
    require_result_file(options.out, "replay.json");
    // Not into the schedules' folder (that of a single schedule file too): a replay of the folder
    // reads every *.json there, replay.json among them.
    std::error_code same_error;
    const std::filesystem::path folder = std::filesystem::is_directory(options.path, same_error)
                                             ? std::filesystem::path(options.path)
                                             : std::filesystem::absolute(options.path, same_error).parent_path();
    if (!options.out.empty() && std::filesystem::equivalent(options.out, folder, same_error))
        throw sim::InputError(options.out, "--out",
                              "is the schedule folder, where replay.json would be read as a schedule by the next "
                              "replay; expected another folder");
    std::vector<std::string> files = replay::schedule_files(options.path);
    if (options.limit >= 0 && files.size() > static_cast<std::size_t>(options.limit))
        files.resize(static_cast<std::size_t>(options.limit));
    // Load everything first, so that bad input exits 2 before any replay work is done.
    std::vector<replay::Schedule> schedules;
    for (const std::string& file : files) schedules.push_back(replay::load_schedule(file));
    // The CUDA backend already runs each step in parallel and its sessions share one device.
    const int jobs = options.jobs > 0 ? options.jobs : options.backend == "cpu" ? 2 : 1;
    const replay::Summary summary =
        replay::summarize(replay::replay_all(schedules, *backend, jobs, RunningSummary(schedules.size())));
    nlohmann::json document = replay::summary_json(summary, backend->name());
    document["graph_guard"] = !options.no_graph_guard;
    write_result_file(options.out, "replay.json", document);
    if (options.json)
        std::cout << document.dump(2) << "\n";
    else
        print_table(summary, options.backend, !options.no_graph_guard);
    if (summary.oracle_agrees()) return 0;
    std::fflush(stdout);  // the table before the reproduce line, also when both go to one file
    for (const replay::ScheduleResult& r : summary.results) {
        if (r.agreement == replay::Agreement::agree) continue;
        std::fprintf(stderr, "%s %s: reproduce: %s replay %s --backend %s%s\n",
                     std::string(replay::agreement_name(r.agreement)).c_str(), r.schedule.c_str(),
                     sim::kvcheck_command().c_str(), sim::shell_word(r.schedule).c_str(), options.backend.c_str(),
                     options.no_graph_guard ? " --no-graph-guard" : "");
        break;  // one command: the first schedule the oracle disagrees with
    }
    return 1;
}

}  // namespace

void register_replay(CLI::App& app, Common& common) {
    auto* cmd = app.add_subcommand(
        "replay", "Replay exported schedules with the tiny model and compare resumed vs recomputed bit for bit");
    auto options = std::make_shared<ReplayOptions>();
    cmd->add_option("DIR", options->path, "Folder of *.json schedules (or one schedule file)")->required();
    cmd->add_option("--backend", options->backend, "cpu (fp32 reference, the default) or cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_flag("--json", options->json, "Print the summary as JSON");
    cmd->add_option("--out", options->out, "Also write the summary (the --json document) to DIR/replay.json");
    cmd->add_option("--limit", options->limit, "Replay only the first N schedules in file-name order (default: all)")
        ->check(CLI::Range(1, std::numeric_limits<int>::max()));
    cmd->add_option("--jobs", options->jobs,
                    "Schedules replayed at once (default: 2 on cpu, 1 on cuda); results do not depend on it")
        ->check(CLI::Range(1, 256));
    cmd->add_flag("--no-graph-guard", options->no_graph_guard,
                  "cuda only: never recapture the decode graph when a reload moved a cache buffer it baked, as the "
                  "no-graph-guard mutant; a resume with a reload then reads stale addresses");
    cmd->callback([options, &common] { common.exit_code = run_replay(*options); });
}

}  // namespace kvcheck::cli
