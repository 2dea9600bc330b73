// Log-linear bucketing: value v >= 8 with top bit e falls in octave e-3 and one of 8 linear
// sub-buckets, so every bucket is at most 12.5% wide relative to its lower bound.
#include "sim/workload/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kvcheck::sim {

std::size_t LogHistogram::bucket_of(std::uint64_t value) {
    if (value < kExact) return static_cast<std::size_t>(value);
    const int top_bit = 63 - std::countl_zero(value);
    const int shift = top_bit - kSubBits;
    const std::size_t sub = static_cast<std::size_t>(value >> shift) & (kExact - 1);
    return kExact + static_cast<std::size_t>(shift) * kExact + sub;
}

std::uint64_t LogHistogram::bucket_low(std::size_t bucket) {
    if (bucket < kExact) return bucket;
    const std::size_t shift = (bucket - kExact) / kExact;
    const std::uint64_t sub = (bucket - kExact) % kExact;
    return (kExact + sub) << shift;
}

std::uint64_t LogHistogram::bucket_high(std::size_t bucket) {
    if (bucket < kExact) return bucket;
    const std::size_t shift = (bucket - kExact) / kExact;
    return bucket_low(bucket) + ((std::uint64_t{1} << shift) - 1);
}

void LogHistogram::add(std::uint64_t value) {
    const std::size_t bucket = bucket_of(value);
    KV_ASSERT(bucket < kBuckets, "bucket index out of range");
    KV_ASSERT(bucket_low(bucket) <= value && value <= bucket_high(bucket), "a value lies inside its bucket");
    ++counts_[bucket];
    ++count_;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    sum_ += static_cast<double>(value);
}

std::uint64_t LogHistogram::quantile(double fraction) const {
    if (count_ == 0) return 0;
    // Nearest rank: the value at rank ceil(fraction * count), 1-based, as the run's metrics.
    const auto rank = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(fraction * static_cast<double>(count_) - 1e-9)));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
        seen += counts_[b];
        if (seen >= rank) return std::clamp(bucket_high(b), min(), max());
    }
    return max_;
}

std::vector<LogHistogram::Bucket> LogHistogram::nonempty_buckets() const {
    std::vector<Bucket> out;
    for (std::size_t b = 0; b < kBuckets; ++b) {
        if (counts_[b] == 0) continue;
        const std::uint64_t low = std::max(bucket_low(b), min_);
        const std::uint64_t high = std::min(bucket_high(b), max_);
        KV_ASSERT(low <= high, "a non-empty bucket overlaps [min, max]");
        out.push_back({low, high, counts_[b]});
    }
    return out;
}

HistogramSampler::HistogramSampler(const LogHistogram& histogram) : buckets_(histogram.nonempty_buckets()) {
    std::uint64_t total = 0;
    for (const LogHistogram::Bucket& bucket : buckets_) {
        total += bucket.count;
        running_.push_back(total);
    }
    KV_ASSERT_EQ(total, histogram.count(), "the buckets hold every value");
}

std::uint64_t HistogramSampler::sample(Rng& rng) const {
    if (buckets_.empty()) return 0;
    const std::uint64_t pick = rng.below(running_.back());
    const auto it = std::upper_bound(running_.begin(), running_.end(), pick);
    KV_ASSERT(it != running_.end(), "the pick is below the total count");
    const LogHistogram::Bucket& bucket = buckets_[static_cast<std::size_t>(it - running_.begin())];
    return bucket.low + rng.below(bucket.high - bucket.low + 1);
}

}  // namespace kvcheck::sim
