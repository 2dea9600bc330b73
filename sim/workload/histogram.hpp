// A fixed-size log-linear histogram of unsigned values (8 buckets per power of two, exact below 8)
// that the trace statistics fill in one pass and the synthesizer samples from with kvcheck::Rng.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/core.hpp"

namespace kvcheck::sim {

class LogHistogram {
public:
    void add(std::uint64_t value);

    std::uint64_t count() const { return count_; }
    std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
    std::uint64_t max() const { return max_; }
    double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }

    // How many recorded values share the bucket of `value` (0 when none).
    std::uint64_t bucket_count(std::uint64_t value) const { return counts_[bucket_of(value)]; }

    // The nearest-rank quantile read from the buckets: the upper bound of the bucket that holds the
    // value at rank ceil(fraction * count), clamped to [min, max]; exact below 16, at most 12.5% high above.
    std::uint64_t quantile(double fraction) const;

    struct Bucket {
        std::uint64_t low;  // inclusive bounds, already narrowed to [min(), max()]
        std::uint64_t high;
        std::uint64_t count;
    };
    // The buckets holding at least one value, in increasing order.
    std::vector<Bucket> nonempty_buckets() const;

private:
    static constexpr int kSubBits = 3;
    static constexpr std::size_t kExact = std::size_t{1} << kSubBits;
    static constexpr std::size_t kBuckets = kExact + (64 - kSubBits) * kExact;

    static std::size_t bucket_of(std::uint64_t value);
    static std::uint64_t bucket_low(std::size_t bucket);
    static std::uint64_t bucket_high(std::size_t bucket);

    std::array<std::uint64_t, kBuckets> counts_{};
    std::uint64_t count_ = 0;
    std::uint64_t min_ = UINT64_MAX;
    std::uint64_t max_ = 0;
    double sum_ = 0;
};

// Draws values with a histogram's frequencies: a bucket by its count (binary search over running
// totals), then uniformly inside it. Built once, so each draw costs O(log buckets).
class HistogramSampler {
public:
    explicit HistogramSampler(const LogHistogram& histogram);
    std::uint64_t sample(Rng& rng) const;  // 0 when the histogram was empty

private:
    std::vector<LogHistogram::Bucket> buckets_;
    std::vector<std::uint64_t> running_;  // running_[i]: total count of buckets 0..i
};

}  // namespace kvcheck::sim
