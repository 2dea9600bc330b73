#include "sim/run/counterexample_schedules.hpp"

#include <filesystem>

#include "sim/des/engine.hpp"
#include "sim/des/schedules.hpp"
#include "sim/io/files.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/scenario/scenario.hpp"

namespace kvcheck::sim {

std::string refresh_counterexample_schedules(const std::string& dir, bool found) {
    const std::string folder = dir + "/schedules";
    std::error_code ec;
    if (!found) {
        if (std::filesystem::is_directory(folder, ec)) remove_schedules(folder);
        return "";
    }
    const Scenario scenario = load_scenario(dir + "/counterexample.json");
    RunOptions options;
    options.schedules_dir = folder;
    const RunResult result = run_scenario(scenario, options);
    if (result.schedules_written == 0)
        return "schedules: none (no read of the counterexample resumed from cache, so there is nothing to replay)";
    return "schedules: " + std::to_string(result.schedules_written) + " in " + folder +
           "; replay: " + kvcheck_command() + " replay " + shell_word(folder) + " --backend cpu";
}

}  // namespace kvcheck::sim
