// Constructors of the concrete trace readers, used by TraceReader::open only.
#pragma once

#include <memory>
#include <string>

#include "sim/workload/trace.hpp"

namespace kvcheck::sim {

// Mooncake and general hash-id JSONL share one reader; Mooncake is strict about its fixed units.
std::unique_ptr<TraceReader> make_jsonl_reader(const std::string& path, const TraceOptions& options);
std::unique_ptr<TraceReader> make_azure_reader(const std::string& path, const TraceOptions& options);

}  // namespace kvcheck::sim
