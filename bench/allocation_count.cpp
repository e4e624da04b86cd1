// Replaces the global operator new and delete to count them (allocation_count.hpp). libstdc++'s
// other forms (arrays, nothrow) call these, so every C++ allocation passes here.
// The benchmark is built only without sanitizers (they replace operator new themselves).
#include "allocation_count.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> allocated{0};
std::atomic<std::uint64_t> freed{0};

void* counted(std::size_t size, std::size_t alignment) {
    allocated.fetch_add(1, std::memory_order_relaxed);
    if (size == 0) size = 1;
    void* p = alignment <= alignof(std::max_align_t)
                  ? std::malloc(size)
                  : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

void released(void* p) noexcept {
    if (p == nullptr) return;
    freed.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
}
}  // namespace

namespace zkr::bench {
std::uint64_t allocations() { return allocated.load(std::memory_order_relaxed); }
std::uint64_t frees() { return freed.load(std::memory_order_relaxed); }
}  // namespace zkr::bench

void* operator new(std::size_t size) { return counted(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t alignment) { return counted(size, static_cast<std::size_t>(alignment)); }
void operator delete(void* p) noexcept { released(p); }
void operator delete(void* p, std::size_t) noexcept { released(p); }
void operator delete(void* p, std::align_val_t) noexcept { released(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { released(p); }
