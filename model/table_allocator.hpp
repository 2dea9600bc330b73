// The allocator of the state table's large arrays (rows, disk copies, prefix index cells). A
// trace replay grows them to hundreds of thousands of entries, and each 4 KiB page of fresh memory
// touched costs a page fault, which on a virtual machine took a third of a cold run
// (docs/performance.md). Blocks of 2 MiB and more are therefore aligned to 2 MiB and their whole
// 2 MiB pages marked for transparent huge pages (Linux madvise: a hint; where THP is off they stay
// ordinary pages), so those fault once per 2 MiB. Smaller blocks, such as the tables of the
// explorers' small worlds, copied millions of times, come from operator new as before.
#pragma once

#include <cstddef>
#include <new>

#include <sys/mman.h>

namespace kvcheck::model {

template <typename T>
struct TableAllocator {
    using value_type = T;
    static constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

    TableAllocator() = default;
    template <typename U>
    TableAllocator(const TableAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kHugePageBytes) return static_cast<T*>(::operator new(bytes));
        // No rounding up: the block's last partial 2 MiB keeps ordinary pages and costs nothing extra.
        void* block = ::operator new (bytes, std::align_val_t{kHugePageBytes});
        madvise(block, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);  // failure only means ordinary pages
        return static_cast<T*>(block);
    }

    void deallocate(T* block, std::size_t n) noexcept {
        if (n * sizeof(T) < kHugePageBytes)
            ::operator delete(block);
        else
            ::operator delete (block, std::align_val_t{kHugePageBytes});
    }

    friend bool operator==(const TableAllocator&, const TableAllocator&) { return true; }
};

}  // namespace kvcheck::model
