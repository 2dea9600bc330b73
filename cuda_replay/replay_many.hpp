// Many schedules at once: the files of a schedule folder, in file-name order, and a pool of
// threads that replays them (`kvcheck replay --jobs`).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cuda_replay/replay.hpp"

namespace kvcheck::replay {

// The schedules to replay, in file-name order; a path that is a file is replayed alone.
// InputError for a missing path, a FIFO or device, or a folder with no *.json schedule.
std::vector<std::string> schedule_files(const std::string& path);

// Replays every schedule on `jobs` threads. Each schedule is replayed alone with its own
// sessions, so its result does not depend on the thread or the order; results keep the input
// order. The first exception (by schedule order) is rethrown. `finished`, when given, is called
// once per schedule as it completes (in completion order, one call at a time), for progress.
std::vector<ScheduleResult> replay_all(const std::vector<Schedule>& schedules, const Backend& backend, int jobs,
                                       const std::function<void(const ScheduleResult&)>& finished = {});

}  // namespace kvcheck::replay
