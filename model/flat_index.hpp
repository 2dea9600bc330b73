// The prefix index as a flat open-addressing hash table (linear probing with wrap-around,
// backward-shift deletion): copying a World copies one vector, which keeps explorers fast, and
// lookups on million-request traces stay O(1). Iteration order is never used for output.
//
// A cell is 8 bytes: a 32-bit fingerprint of the key and the 32-bit value. The full key is not
// stored; the caller keeps it with the value (a segment row holds its own key) and confirms a
// fingerprint match through the `is_key(value)` callback. The home cell is a function of the
// fingerprint alone, so growing and deleting never need the full key.
//
// The table holds any number of cells, not just a power of two: it grows by 1.5x when it would
// be more than 80 % full, so it stays between 53 % and 80 % full once grown, and a cell costs
// 10-15 bytes per entry (docs/performance.md, proposal 6). The home cell maps the fingerprint's
// multiplied high bits onto [0, cells) with one multiply (Lemire's fastrange).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "model/core.hpp"
#include "model/table_allocator.hpp"

namespace kvcheck::model {

class FlatIndex {
public:
    static constexpr std::uint32_t kMissing = 0xFFFFFFFFu;  // also marks an empty cell

    // The value stored for key, or kMissing. `is_key(value)` says whether value belongs to key.
    template <typename IsKey>
    std::uint32_t find(std::uint64_t key, IsKey&& is_key) const {
        if (size_ == 0) return kMissing;
        const std::uint32_t fp = fingerprint(key);
        for (std::size_t i = home(fp); cells_[i].value != kMissing; i = next(i))
            if (cells_[i].fingerprint == fp && is_key(cells_[i].value)) return cells_[i].value;
        return kMissing;
    }

    // Maps key to value; returns the value it replaced, or kMissing. `is_key` as for find.
    template <typename IsKey>
    std::uint32_t put(std::uint64_t key, std::uint32_t value, IsKey&& is_key) {
        if ((size_ + 1) * kLoadDenominator > cells_.size() * kLoadNumerator) grow();
        const std::uint32_t fp = fingerprint(key);
        std::size_t i = home(fp);
        for (; cells_[i].value != kMissing; i = next(i)) {
            if (cells_[i].fingerprint == fp && is_key(cells_[i].value)) {
                const std::uint32_t old = cells_[i].value;
                cells_[i].value = value;
                return old;
            }
        }
        cells_[i] = {fp, value};
        ++size_;
        return kMissing;
    }

    // Removes key only while it still maps to value (values name their key, so no confirmation).
    void erase(std::uint64_t key, std::uint32_t value) {
        if (size_ == 0) return;
        const std::uint32_t fp = fingerprint(key);
        std::size_t i = home(fp);
        while (cells_[i].fingerprint != fp || cells_[i].value != value) {
            if (cells_[i].value == kMissing) return;
            i = next(i);
        }
        // Backward-shift deletion keeps every probe chain unbroken without tombstones: the entry
        // at j moves into the hole at i unless its home lies cyclically in (i, j], that is, after
        // the hole on its own probe path (j < i when the chain wrapped past the last cell).
        for (std::size_t j = next(i);; j = next(j)) {
            if (cells_[j].value == kMissing) break;
            const std::size_t h = home(cells_[j].fingerprint);
            const bool movable = (j > i) ? (h <= i || h > j) : (h <= i && h > j);
            if (movable) {
                cells_[i] = cells_[j];
                i = j;
            }
        }
        cells_[i].value = kMissing;
        --size_;
    }

    // Starts fetching key's home cell, so that a batch of keys known in advance misses the cache
    // once in parallel instead of once each in turn.
    void prefetch(std::uint64_t key) const {
        if (!cells_.empty()) __builtin_prefetch(&cells_[home(fingerprint(key))]);
    }

    std::size_t size() const { return size_; }
    std::size_t cells() const { return cells_.size(); }

    // Visits every (fingerprint, value) pair.
    template <typename Visit>
    void for_each(Visit visit) const {
        for (const Cell& c : cells_)
            if (c.value != kMissing) visit(std::uint64_t{c.fingerprint}, c.value);
    }

    // The raw table, for model/snapshot.cpp: 8 bytes a cell, and how many cells are in use.
    const void* cell_bytes() const { return cells_.data(); }
    void assign_cells(const void* bytes, std::size_t cells, std::size_t used) {
        cells_.resize(cells);
        if (cells != 0) std::memcpy(cells_.data(), bytes, cells * sizeof(Cell));
        size_ = used;
    }

    // The cell a key's probe starts at in a table of `cells` cells: exposed so that tests can
    // build collisions.
    static std::size_t home_of(std::uint64_t key, std::size_t cells) {
        return fastrange(multiplied(fingerprint(key)), cells);
    }

    // The sizes the table takes as it grows: 16 cells, then 1.5x the previous size each time.
    static std::size_t grown_cells(std::size_t cells) { return cells == 0 ? 16 : cells + cells / 2; }

private:
    // Grow before the table would be more than kLoadNumerator / kLoadDenominator full.
    static constexpr std::size_t kLoadNumerator = 4;
    static constexpr std::size_t kLoadDenominator = 5;

    struct Cell {
        std::uint32_t fingerprint = 0;
        std::uint32_t value = kMissing;
    };
    static_assert(sizeof(Cell) == 8);

    static std::uint32_t fingerprint(std::uint64_t key) { return static_cast<std::uint32_t>(key ^ (key >> 32)); }
    // Fibonacci hashing of the fingerprint: equal low bits in keys do not share home cells.
    static std::uint32_t multiplied(std::uint32_t fp) { return fp * 0x9E3779B1u; }
    // Maps a 32-bit hash onto [0, cells) by its high bits (cells < 2^32).
    static std::size_t fastrange(std::uint32_t hash, std::size_t cells) { return (std::uint64_t{hash} * cells) >> 32; }
    std::size_t home(std::uint32_t fp) const { return fastrange(multiplied(fp), cells_.size()); }
    std::size_t next(std::size_t i) const { return i + 1 == cells_.size() ? 0 : i + 1; }

    void grow() {
        std::vector<Cell, TableAllocator<Cell>> old(grown_cells(cells_.size()));
        KV_ASSERT(old.size() < (std::size_t{1} << 32), "the prefix index outgrew 2^32 cells");
        old.swap(cells_);
        size_ = 0;
        for (const Cell& c : old) {
            if (c.value == kMissing) continue;
            std::size_t i = home(c.fingerprint);
            while (cells_[i].value != kMissing) i = next(i);
            cells_[i] = c;
            ++size_;
        }
    }

    std::vector<Cell, TableAllocator<Cell>> cells_;
    std::size_t size_ = 0;
};

}  // namespace kvcheck::model
