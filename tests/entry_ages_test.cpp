// sim::DurationHistogram, the bounded histogram behind the entry ages of report.json and
// metrics.prom (docs/metrics.md, *Entry ages*); tests/reuse_figures_test.cpp runs the ages
// themselves through the kvcheck binary.
#include <gtest/gtest.h>

#include "sim/report/entry_ages.hpp"

using kvcheck::sim::DurationHistogram;

// Proves: a duration histogram counts each duration in the bucket of the first bound at or above
// it (ten bounds a decade, 1 µs to 10,000 s, one bucket past them), gives a percentile as that
// bucket's bound but never above the largest duration, counts exactly at a bound, and merges by
// adding up.
TEST(DurationHistogram, BucketsAndPercentiles) {
    EXPECT_EQ(DurationHistogram::bound_ns(0), 1'000u);
    EXPECT_EQ(DurationHistogram::bound_ns(5), 3'150u);
    EXPECT_EQ(DurationHistogram::bound_ns(30), 1'000'000u);
    for (std::size_t b = 1; b < DurationHistogram::kBounds; ++b) {
        EXPECT_GT(DurationHistogram::bound_ns(b), DurationHistogram::bound_ns(b - 1));
        EXPECT_LE(DurationHistogram::bound_ns(b) * 100, DurationHistogram::bound_ns(b - 1) * 128)
            << "bucket " << b << " is over 28 % wide";
    }
    DurationHistogram h;
    EXPECT_EQ(h.quantile_ms(0.5), 0.0);
    for (std::uint64_t ms : {1, 2, 3, 4, 1000}) h.add(ms * 1'000'000);
    EXPECT_EQ(h.count(), 5u);
    EXPECT_DOUBLE_EQ(h.mean_ms(), 202.0);
    EXPECT_DOUBLE_EQ(h.max_ms(), 1000.0);
    EXPECT_DOUBLE_EQ(h.quantile_ms(0.2), 1.0) << "1 ms sits on a bound";
    EXPECT_DOUBLE_EQ(h.quantile_ms(0.6), 3.15) << "3 ms is counted up to the bound above it";
    EXPECT_DOUBLE_EQ(h.quantile_ms(0.8), 4.0);
    EXPECT_DOUBLE_EQ(h.quantile_ms(1.0), 1000.0);
    EXPECT_EQ(h.at_most(1'000'000), 1u);
    EXPECT_EQ(h.at_most(10'000'000), 4u);
    EXPECT_EQ(h.at_most(1'000'000'000), 5u);
    DurationHistogram late;
    late.add(20'000ULL * 1'000'000'000);  // 20,000 s: past the last bound
    EXPECT_DOUBLE_EQ(late.quantile_ms(0.5), 20'000'000.0);
    EXPECT_EQ(late.at_most(DurationHistogram::bound_ns(DurationHistogram::kBounds - 1)), 0u);
    h.merge(late);
    EXPECT_EQ(h.count(), 6u);
    EXPECT_DOUBLE_EQ(h.max_ms(), 20'000'000.0);
    EXPECT_DOUBLE_EQ(h.quantile_ms(0.5), 3.15);
}
