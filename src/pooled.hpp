// Objects made once per request or per blocking call, from a pool: a steady stream of them then
// allocates nothing. Boost.Pool's singleton pools lock per call and never give their blocks back,
// so a burst keeps its peak in the pool. An address-sanitized build allocates each one on its
// own, so that a use after its end is still caught.
#pragma once

#include <boost/pool/pool_alloc.hpp>
#include <boost/pool/singleton_pool.hpp>

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace zkr::detail {

/// The allocator make_pooled hands allocate_shared: Boost.Pool's singleton pool of blocks of T's
/// size (fast_pool_allocator's own pools), taken and given back one block at a time. Unlike
/// fast_pool_allocator, whose every construction and rebinding takes the pool's lock (to make the
/// pool exist before static initialization ends), it locks only to take or give a block: two
/// locks per object, not five (allocate_shared rebinds twice).
template <typename T>
struct pool_allocator {
    using value_type = T;

    pool_allocator() noexcept = default;
    template <typename U>
    pool_allocator(const pool_allocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        void* p = n == 1 ? pool::malloc() : pool::ordered_malloc(n);
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n == 1) pool::free(p);
        else pool::free(p, n);
    }
    template <typename U>
    bool operator==(const pool_allocator<U>&) const noexcept { return true; }

private:
    using pool = boost::singleton_pool<boost::fast_pool_allocator_tag, sizeof(T)>;
};

/// make_shared, from the pool of objects of T's size (the object and its counts in one block).
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
#if defined(__SANITIZE_ADDRESS__)
    return std::make_shared<T>(std::forward<Args>(args)...);
#else
    return std::allocate_shared<T>(pool_allocator<T>(), std::forward<Args>(args)...);
#endif
}

}  // namespace zkr::detail
