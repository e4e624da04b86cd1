// Objects made once per request or per blocking call, from a pool: a steady stream of them then
// allocates nothing. Boost.Pool's singleton pools lock per call and never give their blocks back,
// so a burst keeps its peak in the pool. An address-sanitized build allocates each one on its
// own, so that a use after its end is still caught.
#pragma once

#include <boost/pool/pool_alloc.hpp>

#include <memory>
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

}  // namespace zkr::detail
