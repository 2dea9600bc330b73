// The replay schedules of a checker counterexample: DIR/counterexample.json run in steps mode
// with its schedules exported to DIR/schedules/, so that `kvcheck replay DIR/schedules` confirms
// or refutes the oracle's verdict through the attention kernels (CPU, or CUDA when present).
#pragma once

#include <string>

namespace kvcheck::sim {

// With `found`, exports the schedules of DIR/counterexample.json and returns the line to print;
// without, removes what an earlier export left in DIR/schedules and returns "".
std::string refresh_counterexample_schedules(const std::string& dir, bool found);

}  // namespace kvcheck::sim
