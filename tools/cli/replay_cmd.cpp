// `kvcheck replay DIR --backend cpu|cuda`: replays every *.json schedule in DIR (or one file) with
// the tiny model, compares resumed against recomputed outputs bit for bit, and checks the
// simulator's oracle: exit 0 when every divergence matches it, 1 otherwise, 2 on bad input.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cuda_replay/replay.hpp"
#include "sim/input_error.hpp"
#include "tools/cli/commands.hpp"

namespace kvcheck::cli {

namespace {

struct ReplayOptions {
    std::string path;
    std::string backend = "cpu";
    bool json = false;
    int limit = -1;
};

// The schedules to replay, in file-name order; a path that is a file is replayed alone.
std::vector<std::string> schedule_files(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (fs::is_regular_file(path, error)) return {path};
    if (!fs::is_directory(path, error)) throw sim::InputError(path, "", "no such schedule folder or file");
    std::vector<std::string> out;
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error))
        if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path().string());
    if (error) throw sim::InputError(path, "", "cannot list the folder: " + error.message());
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
        return fs::path(a).filename().string() < fs::path(b).filename().string();
    });
    return out;
}

void print_table(const replay::Summary& summary, const std::string& backend) {
    std::printf("%-32s %8s  %-9s  %-10s %-18s %8s  %-7s  %s\n", "schedule", "request", "verdict", "group", "form", "position",
                "oracle", "agreement");
    for (const replay::ScheduleResult& r : summary.results) {
        const std::string name = std::filesystem::path(r.schedule).filename().string();
        const replay::Divergence* d = r.divergence ? &*r.divergence : nullptr;
        std::printf("%-32s %8lld  %-9s  %-10s %-18s %8s  %-7s  %s\n", name.c_str(), static_cast<long long>(r.request),
                    r.bit_exact ? "bit-exact" : "diverged", d ? d->group_name.c_str() : "-", d ? d->form.c_str() : "-",
                    d ? std::to_string(d->position).c_str() : "-", r.oracle_corrupt ? "corrupt" : "clean",
                    std::string(replay::agreement_name(r.agreement)).c_str());
    }
    std::printf("backend=%s schedules=%d bit_exact=%d diverged=%d oracle: agree=%d false_alarm=%d miss=%d recaptures=%d\n",
                backend.c_str(), summary.schedules, summary.bit_exact, summary.diverged, summary.agree, summary.false_alarm,
                summary.miss, summary.recaptures);
}

int run_replay(const ReplayOptions& options) {
    std::string why;
    const std::unique_ptr<replay::Backend> backend = replay::make_backend(options.backend, why);
    if (!backend) {
        std::fprintf(stderr, "kvcheck: replay: --backend %s: %s\n", options.backend.c_str(), why.c_str());
        return 2;
    }
    std::vector<std::string> files = schedule_files(options.path);
    if (options.limit >= 0 && files.size() > static_cast<std::size_t>(options.limit))
        files.resize(static_cast<std::size_t>(options.limit));
    // Load everything first, so that bad input exits 2 before any replay work is done.
    std::vector<replay::Schedule> schedules;
    for (const std::string& file : files) schedules.push_back(replay::load_schedule(file));
    std::vector<replay::ScheduleResult> results;
    for (const replay::Schedule& s : schedules) results.push_back(replay::replay_schedule(s, *backend));
    const replay::Summary summary = replay::summarize(std::move(results));
    if (options.json) std::cout << replay::summary_json(summary, backend->name()).dump(2) << "\n";
    else print_table(summary, options.backend);
    return summary.oracle_agrees() ? 0 : 1;
}

}  // namespace

void register_replay(CLI::App& app, Common& common) {
    auto* cmd = app.add_subcommand("replay", "Replay exported schedules with the tiny model and compare resumed vs recomputed bit for bit");
    auto options = std::make_shared<ReplayOptions>();
    cmd->add_option("DIR", options->path, "Folder of *.json schedules (or one schedule file)")->required();
    cmd->add_option("--backend", options->backend, "cpu (fp32 reference) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_flag("--json", options->json, "Print the summary as JSON");
    cmd->add_option("--limit", options->limit, "Replay only the first N schedules in file-name order")->check(CLI::NonNegativeNumber);
    cmd->callback([options, &common] { common.exit_code = run_replay(*options); });
}

}  // namespace kvcheck::cli
