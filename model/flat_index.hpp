// The prefix index as a flat open-addressing hash table (linear probing, backward-shift
// deletion): copying a World copies one vector, which keeps explorers fast, and lookups on
// million-request traces stay O(1). Iteration order is never used for output.
//
// A cell is 8 bytes: a 32-bit fingerprint of the key and the 32-bit value. The full key is not
// stored; the caller keeps it with the value (a segment row holds its own key) and confirms a
// fingerprint match through the `is_key(value)` callback. The home cell is a function of the
// fingerprint alone, so growing and deleting never need the full key.
#pragma once

#include <cstdint>
#include <vector>

namespace kvcheck::model {

class FlatIndex {
public:
    static constexpr std::uint32_t kMissing = 0xFFFFFFFFu;  // also marks an empty cell

    // The value stored for key, or kMissing. `is_key(value)` says whether value belongs to key.
    template <typename IsKey>
    std::uint32_t find(std::uint64_t key, IsKey&& is_key) const {
        if (size_ == 0) return kMissing;
        const std::uint32_t fp = fingerprint(key);
        for (std::size_t i = home(fp); cells_[i].value != kMissing; i = (i + 1) & mask())
            if (cells_[i].fingerprint == fp && is_key(cells_[i].value)) return cells_[i].value;
        return kMissing;
    }

    // Maps key to value; returns the value it replaced, or kMissing. `is_key` as for find.
    template <typename IsKey>
    std::uint32_t put(std::uint64_t key, std::uint32_t value, IsKey&& is_key) {
        if ((size_ + 1) * 4 > cells_.size() * 3) grow();
        const std::uint32_t fp = fingerprint(key);
        std::size_t i = home(fp);
        for (; cells_[i].value != kMissing; i = (i + 1) & mask()) {
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
            i = (i + 1) & mask();
        }
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        for (std::size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
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

    // Visits every (fingerprint, value) pair.
    template <typename Visit>
    void for_each(Visit visit) const {
        for (const Cell& c : cells_)
            if (c.value != kMissing) visit(std::uint64_t{c.fingerprint}, c.value);
    }

    // The cell a key's probe starts at in a table of `cells` cells (a power of two): exposed so
    // that tests can build collisions.
    static std::size_t home_of(std::uint64_t key, std::size_t cells) {
        return multiplied(fingerprint(key)) >> (32 - log2(cells));
    }

private:
    struct Cell {
        std::uint32_t fingerprint = 0;
        std::uint32_t value = kMissing;
    };

    static std::uint32_t fingerprint(std::uint64_t key) { return static_cast<std::uint32_t>(key ^ (key >> 32)); }
    // Fibonacci hashing of the fingerprint: equal low bits in keys do not share home cells.
    static std::uint32_t multiplied(std::uint32_t fp) { return fp * 0x9E3779B1u; }
    static unsigned log2(std::size_t cells) { return static_cast<unsigned>(__builtin_ctzll(cells)); }
    std::size_t home(std::uint32_t fp) const { return multiplied(fp) >> shift_; }
    std::size_t mask() const { return cells_.size() - 1; }

    void grow() {
        std::vector<Cell> old(cells_.empty() ? 16 : cells_.size() * 2);
        old.swap(cells_);
        shift_ = 32 - log2(cells_.size());
        size_ = 0;
        for (const Cell& c : old) {
            if (c.value == kMissing) continue;
            std::size_t i = home(c.fingerprint);
            while (cells_[i].value != kMissing) i = (i + 1) & mask();
            cells_[i] = c;
            ++size_;
        }
    }

    std::vector<Cell> cells_;
    unsigned shift_ = 32;
    std::size_t size_ = 0;
};

}  // namespace kvcheck::model
