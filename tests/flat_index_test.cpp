// Unit tests of the prefix index (model/flat_index.hpp): it agrees with std::map under colliding
// keys, grows by 1.5x through non-power-of-two sizes without passing 80 % load, and backward-shift
// deletion keeps probe chains intact where they wrap from the last cell to the first; the
// allocator of the large tables aligns their big blocks for huge pages and keeps their contents.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "model/core.hpp"
#include "model/flat_index.hpp"
#include "model/table_allocator.hpp"

using kvcheck::model::FlatIndex;

namespace {

// As in the model, a value names its key (value / 4 is the key's number in `keys`), which is
// what the confirmation callback relies on.
struct KeyedValues {
    std::vector<std::uint64_t> keys;
    auto is_key(std::uint64_t key) const {
        return [this, key](std::uint32_t v) { return keys[v / 4] == key; };
    }
};

// Runs `ops` random puts, erases (some with a stale value, which must be a no-op) and finds on
// index and on a std::map, and checks that they agree after every op; every 97 ops, every key is
// looked up. `after_op` sees the reference after each op. Returns how many erases removed a key.
template <typename AfterOp>
std::size_t agree_with_map(FlatIndex& index, const KeyedValues& kv, int ops, std::uint64_t seed, AfterOp after_op) {
    kvcheck::Rng rng(seed);
    std::map<std::uint64_t, std::uint32_t> reference;
    std::size_t erased = 0;
    for (int op = 0; op < ops; ++op) {
        const auto number = static_cast<std::uint32_t>(rng.below(kv.keys.size()));
        const std::uint64_t key = kv.keys[number];
        const auto value = static_cast<std::uint32_t>(number * 4 + rng.below(4));
        const auto it = reference.find(key);
        switch (rng.below(3)) {
            case 0: {
                const std::uint32_t old = index.put(key, value, kv.is_key(key));
                EXPECT_EQ(old, it == reference.end() ? FlatIndex::kMissing : it->second);
                reference[key] = value;
                break;
            }
            case 1: {
                index.erase(key, value);
                if (it != reference.end() && it->second == value) {
                    reference.erase(it);
                    ++erased;
                }
                break;
            }
            default:
                EXPECT_EQ(index.find(key, kv.is_key(key)), it == reference.end() ? FlatIndex::kMissing : it->second);
                break;
        }
        EXPECT_EQ(index.size(), reference.size()) << "after op " << op;
        if (op % 97 == 0)
            for (std::uint64_t k : kv.keys) {
                const auto r = reference.find(k);
                EXPECT_EQ(index.find(k, kv.is_key(k)), r == reference.end() ? FlatIndex::kMissing : r->second)
                    << "key " << k << " op " << op;
            }
        after_op(reference);
        if (::testing::Test::HasFailure()) return erased;
    }
    std::size_t visited = 0;
    index.for_each([&](std::uint64_t, std::uint32_t v) {
        ++visited;
        const std::uint64_t k = kv.keys[v / 4];
        ASSERT_TRUE(reference.count(k));
        EXPECT_EQ(reference.at(k), v);
    });
    EXPECT_EQ(visited, reference.size());
    return erased;
}

// Keys whose home is `cell` in a table of `cells` cells, searched from `from` upwards.
void add_keys_with_home(std::vector<std::uint64_t>& keys, std::size_t count, std::size_t cell, std::size_t cells,
                        std::uint64_t from) {
    const std::size_t wanted = keys.size() + count;
    for (std::uint64_t x = from; keys.size() < wanted; ++x)
        if (FlatIndex::home_of(x * 7919, cells) == cell) keys.push_back(x * 7919);
}

}  // namespace

// The index agrees with std::map with keys chosen to collide: equal fingerprints (only the
// confirmation tells them apart), one shared home cell in every table size, and homes at the
// last cell of the 81-cell table the run grows into (wrap-around), beside unrelated keys.
TEST(FlatIndexTest, AgreesWithMapUnderCollisions) {
    KeyedValues kv;
    for (std::uint64_t i = 1; i <= 12; ++i) kv.keys.push_back((i << 32) | i);  // every fingerprint is 0
    for (std::uint64_t x = 1; kv.keys.size() < 24; ++x)                        // home 0 in every table below 2^20 cells
        if (FlatIndex::home_of(x, 1u << 20) == 0) kv.keys.push_back(x);
    add_keys_with_home(kv.keys, 12, 80, 81, 1);
    for (std::uint64_t i = 0; i < 24; ++i) kv.keys.push_back(kvcheck::mix64(i) | 2);
    FlatIndex index;
    const std::size_t erased = agree_with_map(index, kv, 20'000, 20240611, [](const auto&) {});
    EXPECT_GT(erased, 1000u) << "the run must exercise deletion";
    EXPECT_EQ(index.cells(), 81u) << "60 keys at most 80 % full: 16, 24, 36, 54, then 81 cells";
}

// Growing: the sizes are 16 cells and then 1.5x the last, never a power of two after 16, the
// load never passes 80 %, and every key survives each rehash and a full erase in a new order.
TEST(FlatIndexTest, GrowsByHalfBelowFourFifthsLoad) {
    KeyedValues kv;
    for (std::uint64_t i = 0; i < 5000; ++i) kv.keys.push_back(kvcheck::mix64(i + 1));
    FlatIndex index;
    std::vector<std::size_t> sizes;
    for (std::uint32_t i = 0; i < kv.keys.size(); ++i) {
        ASSERT_EQ(index.put(kv.keys[i], i * 4, kv.is_key(kv.keys[i])), FlatIndex::kMissing);
        if (sizes.empty() || sizes.back() != index.cells()) sizes.push_back(index.cells());
        ASSERT_LE(index.size() * 5, index.cells() * 4) << "more than 80 % full after put " << i;
    }
    ASSERT_GE(sizes.size(), 10u);
    EXPECT_EQ(sizes.front(), 16u);
    for (std::size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], FlatIndex::grown_cells(sizes[i - 1]));
    EXPECT_GT(index.size() * 2, index.cells()) << "grown only when needed: at least half full";
    for (std::uint32_t i = 0; i < kv.keys.size(); ++i) ASSERT_EQ(index.find(kv.keys[i], kv.is_key(kv.keys[i])), i * 4);
    kvcheck::Rng rng(7);
    std::vector<std::uint32_t> order(kv.keys.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    for (std::size_t n = 0; n < order.size(); ++n) {
        const std::uint32_t i = order[n];
        index.erase(kv.keys[i], i * 4);
        ASSERT_EQ(index.find(kv.keys[i], kv.is_key(kv.keys[i])), FlatIndex::kMissing);
        if (n % 500 != 0) continue;
        for (std::size_t m = n + 1; m < order.size(); ++m)
            ASSERT_EQ(index.find(kv.keys[order[m]], kv.is_key(kv.keys[order[m]])), order[m] * 4) << "after erase " << n;
    }
    EXPECT_EQ(index.size(), 0u);
}

// Wrap-around in a non-power-of-two table: the index is grown to 24 cells and then holds at most
// 18 keys, so it stays at 24 (a put checks the load before it knows whether its key is new).
// Twelve keys have their home in the last two cells and six in the first two (four share
// fingerprint 0, home 0), so chains run from cell 22 past the end into cell 0 and on, and erasing
// on either side of the wrap must shift the right entries back.
TEST(FlatIndexTest, BackwardShiftAcrossTheWrap) {
    KeyedValues kv;
    add_keys_with_home(kv.keys, 6, 23, 24, 1);
    add_keys_with_home(kv.keys, 6, 22, 24, 1);
    for (std::uint64_t i = 1; i <= 4; ++i) kv.keys.push_back((i << 32) | i);  // fingerprint 0: home 0
    add_keys_with_home(kv.keys, 2, 1, 24, 1);
    ASSERT_EQ(kv.keys.size(), 18u);
    FlatIndex index;
    for (std::uint32_t i = 0; i < 13; ++i) index.put(kv.keys[i], i * 4, kv.is_key(kv.keys[i]));
    ASSERT_EQ(index.cells(), 24u) << "the 13th key grows 16 cells to 24";
    for (std::uint32_t i = 0; i < 13; ++i) index.erase(kv.keys[i], i * 4);
    ASSERT_EQ(index.size(), 0u);
    std::size_t most_at_the_end = 0;  // keys homed in cells 22-23 present at once
    const std::size_t erased =
        agree_with_map(index, kv, 20'000, 99, [&](const std::map<std::uint64_t, std::uint32_t>& ref) {
            std::size_t at_end = 0;
            for (std::size_t i = 0; i < 12; ++i) at_end += ref.count(kv.keys[i]);
            most_at_the_end = std::max(most_at_the_end, at_end);
        });
    EXPECT_EQ(index.cells(), 24u);
    EXPECT_GE(most_at_the_end, 6u) << "chains from cells 22-23 must have wrapped past cell 0";
    EXPECT_GT(erased, 1000u);
}

// Blocks of 2 MiB and more start on a 2 MiB boundary (so whole huge pages fit in them); smaller
// ones come from operator new. A table grown across that size keeps every row, and an index of
// 400,000 keys (3.2 MB of cells) still finds each of them.
TEST(TableAllocatorTest, LargeBlocksAreHugePageAlignedAndKeepTheirContents) {
    using kvcheck::model::TableAllocator;
    constexpr std::size_t huge = TableAllocator<std::uint64_t>::kHugePageBytes;
    std::vector<std::uint64_t, TableAllocator<std::uint64_t>> rows;
    bool small_seen = false;
    bool large_seen = false;
    for (std::uint64_t i = 0; i < 3 * huge / sizeof(std::uint64_t); ++i) {
        const std::size_t capacity = rows.capacity();
        rows.push_back(kvcheck::mix64(i));
        if (rows.capacity() == capacity) continue;
        const bool large = rows.capacity() * sizeof(std::uint64_t) >= huge;
        (large ? large_seen : small_seen) = true;
        if (large) {
            ASSERT_EQ(reinterpret_cast<std::uintptr_t>(rows.data()) % huge, 0u) << "capacity " << rows.capacity();
        }
    }
    EXPECT_TRUE(small_seen && large_seen);
    for (std::uint64_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i], kvcheck::mix64(i));

    KeyedValues kv;
    for (std::uint64_t i = 0; i < 400'000; ++i) kv.keys.push_back(kvcheck::mix64(i + 11));
    FlatIndex index;
    for (std::uint32_t i = 0; i < kv.keys.size(); ++i) index.put(kv.keys[i], i * 4, kv.is_key(kv.keys[i]));
    ASSERT_GE(index.cells() * 8, huge);
    for (std::uint32_t i = 0; i < kv.keys.size(); ++i) ASSERT_EQ(index.find(kv.keys[i], kv.is_key(kv.keys[i])), i * 4);
}
