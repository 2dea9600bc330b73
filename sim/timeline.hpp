// timeline.json in the Chrome trace event format (opens in Perfetto): one track per request for
// the first N requests (lookup, I/O wait, prefill, decode), instants for faults and violations,
// and counters for GPU memory by form. Bounded: it never grows past its request and sample caps.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/world.hpp"

namespace kvcheck::sim {

class Timeline {
public:
    explicit Timeline(std::uint32_t max_requests) : max_requests_(max_requests) {}

    bool tracks(std::uint32_t uid) const { return uid < max_requests_; }
    void span(std::uint32_t uid, const char* name, std::uint64_t start_ns, std::uint64_t end_ns, const std::string& detail = "");
    // False once the instant cap is reached: callers then skip building names and details.
    bool takes_instants() const { return instants_ < kMaxInstants; }
    void instant(const std::string& name, std::uint64_t at_ns, const std::string& detail);
    void memory(std::uint64_t at_ns, const model::World& world);
    nlohmann::json to_json() const;

private:
    static constexpr std::size_t kMaxInstants = 20'000;
    static constexpr std::size_t kMaxSamples = 20'000;
    // A memory counter sample, kept as numbers and turned into JSON only by to_json(): building
    // the JSON object per sample cost a few percent of a replay. It goes before events_[position].
    struct MemorySample {
        std::size_t position;
        std::uint64_t at_ns;
        std::array<std::uint64_t, model::kFormCount> bytes_by_form;
        std::uint64_t state_table_bytes;
    };
    std::uint32_t max_requests_;
    std::vector<nlohmann::json> events_;
    std::vector<MemorySample> memory_samples_;
    std::size_t instants_ = 0;
    std::uint64_t last_sample_ns_ = 0;
};

}  // namespace kvcheck::sim
