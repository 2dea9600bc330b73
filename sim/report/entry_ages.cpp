#include "sim/report/entry_ages.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kvcheck::sim {

namespace {

// The Renard R10 steps of a decade, in ns for the decade of 1 µs.
constexpr std::array<std::uint64_t, 10> kDecadeSteps{1000, 1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000};

constexpr std::array<std::uint64_t, DurationHistogram::kBounds> make_bounds() {
    std::array<std::uint64_t, DurationHistogram::kBounds> bounds{};
    std::uint64_t decade = 1;
    for (std::size_t b = 0; b < bounds.size(); ++b) {
        if (b > 0 && b % 10 == 0) decade *= 10;
        bounds[b] = kDecadeSteps[b % 10] * decade;
    }
    return bounds;
}

constexpr std::array<std::uint64_t, DurationHistogram::kBounds> kBoundsNs = make_bounds();
static_assert(kBoundsNs.back() == 10'000'000'000'000ULL, "the last bound is 10,000 s");

// For each bit width of a duration, the first bucket whose bound reaches 2^(width-1), its least
// value: add() steps forward from there, at most a few buckets (an octave spans 3 or 4).
constexpr std::array<std::uint8_t, 65> make_first_bucket() {
    std::array<std::uint8_t, 65> first{};
    for (std::size_t width = 1; width < first.size(); ++width) {
        const std::uint64_t least = std::uint64_t{1} << (width - 1);
        std::size_t b = 0;
        while (b < kBoundsNs.size() && kBoundsNs[b] < least) ++b;
        first[width] = static_cast<std::uint8_t>(b);
    }
    return first;
}

constexpr std::array<std::uint8_t, 65> kFirstBucket = make_first_bucket();

}  // namespace

std::uint64_t DurationHistogram::bound_ns(std::size_t b) { return kBoundsNs[b]; }

void DurationHistogram::add(std::uint64_t ns) {
    std::size_t b = kFirstBucket[static_cast<std::size_t>(std::bit_width(ns))];
    while (b < kBoundsNs.size() && kBoundsNs[b] < ns) ++b;
    ++buckets_[b];
    ++count_;
    sum_ns_ += static_cast<double>(ns);
    max_ns_ = std::max(max_ns_, ns);
}

void DurationHistogram::merge(const DurationHistogram& other) {
    for (std::size_t b = 0; b < buckets_.size(); ++b) buckets_[b] += other.buckets_[b];
    count_ += other.count_;
    sum_ns_ += other.sum_ns_;
    max_ns_ = std::max(max_ns_, other.max_ns_);
}

double DurationHistogram::quantile_ms(double fraction) const {
    if (count_ == 0) return 0.0;
    const auto rank =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(fraction * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBounds; ++b) {
        seen += buckets_[b];
        if (seen >= rank) return static_cast<double>(std::min(kBoundsNs[b], max_ns_)) / 1e6;
    }
    return max_ms();
}

std::uint64_t DurationHistogram::at_most(std::uint64_t ns) const {
    std::uint64_t n = 0;
    for (std::size_t b = 0; b < kBounds && kBoundsNs[b] <= ns; ++b) n += buckets_[b];
    return n;
}

void EntryAges::grow(std::uint32_t id) { stamps_.resize(std::max<std::size_t>(id + 1, stamps_.size() * 3 / 2)); }

void EntryAges::depart(std::uint32_t id, model::Form form, std::uint64_t now_ns, AgeHistograms& ages) {
    Stamp& s = stamp(id);
    if (!s.resident()) return;  // it held no GPU copy (on host/disk only)
    s.since &= ~kResident;
    const auto f = static_cast<std::size_t>(form);
    ages[static_cast<std::size_t>(Age::lifetime)][f].add(now_ns - s.since_ns());
    ages[static_cast<std::size_t>(Age::idle_before_eviction)][f].add(now_ns - std::max(s.since_ns(), s.used_ns));
}

void EntryAges::after_step(const model::World& w, const model::StepOutcome& out, std::uint64_t now_ns,
                           AgeHistograms& ages) {
    // Evictions and residency changes in the order they happened (Residency::after_evictions).
    std::size_t next = 0;
    const auto evictions_until = [&](std::size_t end) {
        for (; next < end; ++next) {
            const model::Eviction& e = out.evicted[next];
            if (!e.shed) depart(e.segment, e.form, now_ns, ages);  // (a tier_full drop held no GPU copy)
        }
    };
    for (const model::Residency& r : out.residency) {
        evictions_until(r.after_evictions);
        switch (r.kind) {
            case model::Residency::Kind::written:
            case model::Residency::Kind::loaded: {
                Stamp& s = stamp(r.id);
                // A load brings back content read before: its reuse gap runs from that read.
                s = {now_ns | kResident, r.kind == model::Residency::Kind::written ? now_ns : s.used_ns};
                break;
            }
            case model::Residency::Kind::split: {
                const Stamp from = stamp(r.from);
                stamp(r.id) = from;
                break;
            }
            case model::Residency::Kind::offloaded: depart(r.id, w.segments[r.id].form, now_ns, ages); break;
        }
    }
    evictions_until(out.evicted.size());
}

void EntryAges::read(const model::World& w, std::uint32_t r, std::uint64_t now_ns, AgeHistograms& ages) {
    std::uint32_t previous = model::kNone;
    for (const model::PlanEntry& e : w.requests[r].plan) {
        if (e.segment == model::kNone || e.segment == previous) continue;
        previous = e.segment;
        const model::Segment& seg = w.segments[e.segment];
        Stamp& s = stamp(e.segment);
        // A broken policy may read what is not on the GPU, or an id that names another entry now.
        // Reads at the instant of the last one are one reuse (requests that waited for one load
        // resume together).
        if (!s.resident() || !seg.live || seg.epoch != e.epoch || now_ns == s.used_ns) continue;
        ages[static_cast<std::size_t>(Age::reuse_gap)][static_cast<std::size_t>(seg.form)].add(now_ns - s.used_ns);
        s.used_ns = now_ns;
    }
}

}  // namespace kvcheck::sim
