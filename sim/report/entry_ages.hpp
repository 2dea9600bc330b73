// Entry ages: how long state-table entries stay on the GPU, how long they sit there unread before
// they go, and how long passes between reads of one entry (docs/metrics.md, *Entry ages*). The
// model has no clock; the simulator stamps each entry with simulated times as the model reports
// its arrivals, splits and departures, and each resume's reads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/steps.hpp"

namespace kvcheck::sim {

// Durations counted on fixed bounds, ten a decade (1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8 times a
// power of ten) from 1 µs to 10,000 s, so a run of any length keeps a few hundred bytes. Bucket b
// holds the durations above bound b−1 and at most bound b; the last one those above 10,000 s.
class DurationHistogram {
public:
    static constexpr std::size_t kBounds = 101;
    static std::uint64_t bound_ns(std::size_t b);

    void add(std::uint64_t ns);
    void merge(const DurationHistogram& other);
    std::uint64_t count() const { return count_; }
    double sum_ms() const { return sum_ns_ / 1e6; }
    double mean_ms() const { return count_ == 0 ? 0.0 : sum_ms() / static_cast<double>(count_); }
    double max_ms() const { return static_cast<double>(max_ns_) / 1e6; }
    // The nearest-rank percentile, given as the upper bound of the bucket that holds it and never
    // above the largest duration: at most 28 % above the exact value. 0 when empty.
    double quantile_ms(double fraction) const;
    // How many durations are at most `ns`, which must be one of the bounds.
    std::uint64_t at_most(std::uint64_t ns) const;

private:
    std::array<std::uint64_t, kBounds + 1> buckets_{};
    std::uint64_t count_ = 0;
    double sum_ns_ = 0;
    std::uint64_t max_ns_ = 0;
};

// The three ages, each by form.
enum class Age : std::uint8_t { lifetime, idle_before_eviction, reuse_gap };
inline constexpr std::array<const char*, 3> kAgeNames{"lifetime", "idle_before_eviction", "reuse_gap"};
using AgeHistograms = std::array<std::array<DurationHistogram, model::kFormCount>, kAgeNames.size()>;

// Stamps entries by id. An entry's stay on the GPU starts when its content reaches a GPU slot
// (written, or loaded back) and ends when its GPU copy goes (an eviction of any cause, or the
// release after an offload): its lifetime. Its idle time before it goes counts from its last
// read in this stay, or from its arrival if none. A reuse gap is the time from the entry's
// writing or last read to its next read, wherever its copy was in between (a load that brings it
// back for a read is not a use; reads at the same instant are one). Entries still on the GPU at the end of the run give
// no lifetime.
class EntryAges {
public:
    void after_step(const model::World& w, const model::StepOutcome& out, std::uint64_t now_ns, AgeHistograms& ages);
    // Request r's resume read its plan now.
    void read(const model::World& w, std::uint32_t r, std::uint64_t now_ns, AgeHistograms& ages);

private:
    // Simulated times stay below 2^63 ns, so the top bit of `since` says whether the entry is on
    // the GPU: 16 bytes an id.
    static constexpr std::uint64_t kResident = std::uint64_t{1} << 63;
    struct Stamp {
        std::uint64_t since = 0;    // arrival on the GPU, | kResident while it is there
        std::uint64_t used_ns = 0;  // written or last read, on any tier
        bool resident() const { return (since & kResident) != 0; }
        std::uint64_t since_ns() const { return since & ~kResident; }
    };
    Stamp& stamp(std::uint32_t id) {
        if (id >= stamps_.size()) [[unlikely]]
            grow(id);
        return stamps_[id];
    }
    void grow(std::uint32_t id);
    void depart(std::uint32_t id, model::Form form, std::uint64_t now_ns, AgeHistograms& ages);

    std::vector<Stamp> stamps_;
};

}  // namespace kvcheck::sim
