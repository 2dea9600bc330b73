// The prefix index as a flat open-addressing hash table (linear probing, backward-shift
// deletion): copying a World copies two vectors, which keeps explorers fast, and lookups on
// million-request traces stay O(1). Iteration order is never used for output.
#pragma once

#include <cstdint>
#include <vector>

namespace kvcheck::model {

class FlatIndex {
public:
    static constexpr std::uint32_t kMissing = 0xFFFFFFFFu;

    std::uint32_t find(std::uint64_t key) const {
        if (size_ == 0) return kMissing;
        key = normal(key);
        for (std::size_t i = key & mask(); keys_[i] != 0; i = (i + 1) & mask())
            if (keys_[i] == key) return values_[i];
        return kMissing;
    }

    // Maps key to value; returns the value it replaced, or kMissing.
    std::uint32_t put(std::uint64_t key, std::uint32_t value) {
        if ((size_ + 1) * 4 > keys_.size() * 3) grow();
        key = normal(key);
        std::size_t i = key & mask();
        for (; keys_[i] != 0; i = (i + 1) & mask()) {
            if (keys_[i] == key) {
                const std::uint32_t old = values_[i];
                values_[i] = value;
                return old;
            }
        }
        keys_[i] = key;
        values_[i] = value;
        ++size_;
        return kMissing;
    }

    // Removes key only while it still maps to value.
    void erase(std::uint64_t key, std::uint32_t value) {
        if (size_ == 0) return;
        key = normal(key);
        std::size_t i = key & mask();
        while (keys_[i] != key) {
            if (keys_[i] == 0) return;
            i = (i + 1) & mask();
        }
        if (values_[i] != value) return;
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        for (std::size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
            if (keys_[j] == 0) break;
            const std::size_t home = keys_[j] & mask();
            const bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
            if (movable) {
                keys_[i] = keys_[j];
                values_[i] = values_[j];
                i = j;
            }
        }
        keys_[i] = 0;
        --size_;
    }

    std::size_t size() const { return size_; }

    template <typename Visit>
    void for_each(Visit visit) const {
        for (std::size_t i = 0; i < keys_.size(); ++i)
            if (keys_[i] != 0) visit(keys_[i], values_[i]);
    }

private:
    static std::uint64_t normal(std::uint64_t key) { return key == 0 ? 1 : key; }  // 0 marks an empty cell
    std::size_t mask() const { return keys_.size() - 1; }

    void grow() {
        std::vector<std::uint64_t> keys(keys_.empty() ? 16 : keys_.size() * 2, 0);
        std::vector<std::uint32_t> values(keys.size(), 0);
        keys.swap(keys_);
        values.swap(values_);
        size_ = 0;
        for (std::size_t i = 0; i < keys.size(); ++i)
            if (keys[i] != 0) put(keys[i], values[i]);
    }

    std::vector<std::uint64_t> keys_;
    std::vector<std::uint32_t> values_;
    std::size_t size_ = 0;
};

}  // namespace kvcheck::model
