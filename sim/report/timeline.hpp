// timeline.json in the Chrome trace event format (opens in Perfetto): one named track per request
// for the first N requests (its request span carries the lookup's verdict and why it fell short,
// then I/O wait and prefill), a track of instants for faults and violations, and counters for
// GPU memory by form. Bounded: it never grows past its request, instant and sample caps, and an
// instant says where it stopped drawing requests or fault instants.
#pragma once

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "model/world.hpp"

namespace kvcheck::sim {

class Timeline {
public:
    explicit Timeline(std::uint32_t max_requests) : max_requests_(max_requests) {}

    bool tracks(std::uint32_t uid) const { return uid < max_requests_; }
    // A span on request uid's track; past the request cap nothing, but the first request past it
    // leaves an instant that says so. `verdict` and `reason` go into the slice's args when given.
    void span(std::uint32_t uid, const char* name, std::uint64_t start_ns, std::uint64_t end_ns,
              const std::string& detail = "", const std::string& verdict = "", const std::string& reason = "");
    // Requests that ended without a track for the cap (report.json's timeline_untracked_requests).
    std::uint64_t untracked_requests() const { return untracked_; }
    // False once the instant cap is reached: callers then skip building details.
    bool takes_instants() const { return instants_ < kMaxInstants; }
    // A fault instant. Past the cap it is counted, not drawn; the first one past it leaves an
    // instant of its own that says how many were left out. `capped` false (a first violation,
    // one per invariant) draws it whatever the count.
    void instant(const std::string& name, std::uint64_t at_ns, const std::string& detail, bool capped = true);
    // At most one sample a simulated millisecond; once kMaxSamples are kept, every other one is
    // dropped and the spacing doubles, so the samples always span the whole run.
    void memory(std::uint64_t at_ns, const model::World& world);
    // The run's id (metrics.hpp run_id), written into the file's metadata.
    void set_run_id(std::string id) { run_id_ = std::move(id); }
    // The whole timeline.json, newline-terminated, written to `out` as it is made, or as one string.
    void write(std::ostream& out) const;
    std::string dump() const;

private:
    static constexpr std::size_t kMaxInstants = 20'000;
    static constexpr std::size_t kMaxSamples = 20'000;
    // Events are kept as plain values and turned into JSON only by dump(): building a JSON
    // object per event cost several percent of a replay.
    struct Event {
        std::string name;
        std::string detail;
        std::string verdict;
        std::string reason;
        std::uint64_t at_ns = 0;
        std::uint64_t duration_ns = 0;
        std::uint32_t uid = 0;
        bool span = false;  // a span on request uid's track, else a global instant
    };
    // A memory counter sample; it goes before events_[position].
    struct MemorySample {
        std::size_t position;
        std::uint64_t at_ns;
        std::array<std::uint64_t, model::kFormCount> bytes_by_form;
        std::uint64_t state_table_bytes;
    };
    std::uint32_t max_requests_;
    std::string run_id_;
    std::vector<Event> events_;
    std::vector<MemorySample> memory_samples_;
    std::size_t instants_ = 0;
    std::size_t dropped_instants_ = 0;
    std::size_t cap_event_ = 0;  // events_ index of the cap's own instant, once there is one
    bool request_cap_marked_ = false;
    std::uint64_t untracked_ = 0;
    std::uint32_t tracked_ = 0;  // request tracks drawn: uids 0..tracked_-1
    std::uint64_t last_sample_ns_ = 0;
    std::uint64_t sample_spacing_ns_ = 1'000'000;
};

}  // namespace kvcheck::sim
