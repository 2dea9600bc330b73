// The allocator of the state table's rows. A trace replay grows the table to hundreds of
// thousands of rows, and each 4 KiB page of fresh memory it touches costs a page fault, which on
// a virtual machine can take a third of a cold run (docs/performance.md). Blocks of 2 MiB and more
// are therefore aligned to 2 MiB and marked for transparent huge pages (Linux madvise: a hint;
// where THP is off they stay ordinary pages), so they fault once per 2 MiB. Smaller blocks, such
// as the tables of the explorers' small worlds, copied millions of times, come from operator new.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

namespace kvcheck::model {

template <typename T>
struct TableAllocator {
    using value_type = T;
    static constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
    static constexpr std::size_t kHugeBlockMin = std::size_t{512} << 10;  // smaller blocks come from operator new

    TableAllocator() = default;
    template <typename U>
    TableAllocator(const TableAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kHugeBlockMin) return static_cast<T*>(::operator new(bytes));
        const std::size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
        void* block = std::aligned_alloc(kHugePageBytes, rounded);
        if (block == nullptr) throw std::bad_alloc();
        madvise(block, rounded, MADV_HUGEPAGE);  // failure only means ordinary pages
        return static_cast<T*>(block);
    }

    void deallocate(T* block, std::size_t n) noexcept {
        if (n * sizeof(T) < kHugeBlockMin) ::operator delete(block);
        else std::free(block);
    }

    friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};

}  // namespace kvcheck::model
