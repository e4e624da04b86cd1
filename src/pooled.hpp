// Objects made once per request or per blocking call, from a pool: a steady stream of them then
// allocates nothing. Boost.Pool's singleton pools lock per call and never give their blocks back,
// so a burst keeps its peak in the pool. An address-sanitized build allocates each one on its
// own, so that a use after its end is still caught.
#pragma once

#include <boost/pool/pool_alloc.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace zkr::detail {

/// make_shared, from the pool of objects of T's size (the object and its counts in one block).
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
#if defined(__SANITIZE_ADDRESS__)
    return std::make_shared<T>(std::forward<Args>(args)...);
#else
    return std::allocate_shared<T>(boost::fast_pool_allocator<T>(), std::forward<Args>(args)...);
#endif
}

/// The same pools as an allocator, for what a library allocates for zkr (Asio's handler of a post
/// from a thread it does not run on: it recycles handlers' memory on its own threads only).
template <typename T>
struct pool_allocator {
    using value_type = T;
    pool_allocator() noexcept = default;
    template <typename U>
    pool_allocator(const pool_allocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
    T* allocate(std::size_t n) {
#if defined(__SANITIZE_ADDRESS__)
        return std::allocator<T>().allocate(n);
#else
        return boost::fast_pool_allocator<T>::allocate(n);
#endif
    }
    void deallocate(T* p, std::size_t n) noexcept {
#if defined(__SANITIZE_ADDRESS__)
        std::allocator<T>().deallocate(p, n);
#else
        boost::fast_pool_allocator<T>::deallocate(p, n);
#endif
    }
    friend bool operator==(const pool_allocator&, const pool_allocator&) noexcept { return true; }  // (one set of pools)
};

/// A completion handler whose operation Asio allocates from the pools (its associated allocator).
/// Asio recycles a handler's memory itself only on its own threads, in two slots per thread: a
/// post from another thread allocates, and so does one more operation of the cycle beyond the
/// two (a lock cycle's socket wait, its timer and its posts take turns in them).
template <typename Handler>
struct pooled_handler {
    using allocator_type = pool_allocator<void>;
    allocator_type get_allocator() const noexcept { return {}; }
    template <typename... Args>
    void operator()(Args&&... args) {
        handler(std::forward<Args>(args)...);
    }
    Handler handler;
};
template <typename Handler>
pooled_handler<std::decay_t<Handler>> pooled(Handler&& h) {
    return {std::forward<Handler>(h)};
}

}  // namespace zkr::detail
