// How the recipes make the public hold types (lock_hold, lease, hold_view) from a private hold:
// the one friend of those types, so that their constructors from a hold stay out of users' reach.
#pragma once

#include "hold.hpp"
#include "lock_driver.hpp"

#include <zkr/hold_view.hpp>
#include <zkr/lease.hpp>
#include <zkr/lock_hold.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zkr {

/// What the handles of one acquire share: a lock_hold, or the qty leases of one semaphore acquire.
struct lock_hold::group {
    std::shared_ptr<detail::lock_driver> driver;
    std::shared_ptr<detail::hold> hold;
    std::string data;
    std::atomic<std::int32_t> open;  // handles of this acquire not yet released
};

namespace detail {

struct hold_access {
    using group = lock_hold::group;
    /// What `handles` handles of one acquire share.
    static std::shared_ptr<group> share(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h, std::string data,
                                        std::int32_t handles);
    /// Hands over one handle's share of the hold: the hold itself once it was the last handle of
    /// its acquire (to be released), else null (the others still hold the node: nothing to send).
    static std::shared_ptr<hold> take_last(const std::shared_ptr<group>& g) { return --g->open > 0 ? nullptr : g->hold; }
    /// A lock_hold that owns h (the only handle of its acquire).
    static lock_hold make_hold(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h);
    /// qty leases sharing h: its node goes when the last of them is closed.
    static std::vector<lease> make_leases(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h, std::int32_t qty,
                                          std::string data);
    static hold_view view_of(std::shared_ptr<const hold> h) noexcept { return hold_view(std::move(h)); }
};

}  // namespace detail
}  // namespace zkr
