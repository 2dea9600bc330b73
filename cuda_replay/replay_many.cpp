#include "cuda_replay/replay_many.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"

namespace kvcheck::replay {

std::vector<ScheduleResult> replay_all(const std::vector<Schedule>& schedules, const Backend& backend, int jobs,
                                       const std::function<void(const ScheduleResult&)>& finished) {
    std::vector<std::optional<ScheduleResult>> slots(schedules.size());
    std::vector<std::exception_ptr> errors(schedules.size());
    std::atomic<std::size_t> next{0};
    std::mutex report;
    const auto work = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < schedules.size();) {
            try {
                slots[i] = replay_schedule(schedules[i], backend);
                if (finished) {
                    const std::lock_guard<std::mutex> one_at_a_time(report);
                    finished(*slots[i]);
                }
            } catch (...) {
                errors[i] = std::current_exception();
                next.store(schedules.size());  // stop handing out work
            }
        }
    };
    const std::size_t threads = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, jobs)), schedules.size());
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& thread : pool) thread.join();
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
    std::vector<ScheduleResult> results;
    for (std::optional<ScheduleResult>& slot : slots) results.push_back(std::move(*slot));
    return results;
}

std::vector<std::string> schedule_files(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (!fs::is_directory(path, error)) {
        if (!fs::exists(fs::symlink_status(path, error)))
            throw sim::InputError(path, "", "no such schedule folder or file");
        sim::require_input_file(path);  // names a link loop, a dangling link, a FIFO or a device
        return {path};
    }
    std::vector<std::string> out;
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
        if (entry.path().extension() != ".json") continue;
        // A *.json entry that is not a file (a folder, a FIFO, a dangling link) would otherwise be
        // skipped without a word, and the replay would confirm fewer schedules than the user put there.
        sim::require_input_file(entry.path().string());
        out.push_back(entry.path().string());
    }
    if (error) throw sim::InputError(path, "", "cannot list the folder: " + error.message());
    // A replay that confirms nothing must not pass: an empty folder is bad input, as for kvcheck run.
    if (out.empty()) throw sim::InputError(path, "", "no *.json schedules in this folder");
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
        return fs::path(a).filename().string() < fs::path(b).filename().string();
    });
    return out;
}

}  // namespace kvcheck::replay
