// The machines' unit tests: the first action of a kind among a machine's actions (any machine on
// recipes/core/zk_ops.hpp, whose actions hold zk::op and its own outcomes), and the replies they
// feed it.
#pragma once

#include "../../recipes/core/zk_ops.hpp"

#include <zkr/error.hpp>

#include <type_traits>
#include <variant>
#include <vector>

namespace zkr::test {

/// The first action of type T: an op (zk::get_data, zk::after, ...) or one of the machine's own
/// outcomes; nullptr if there is none.
template <typename T, typename Actions>
const T* find_action(const Actions& actions) {
    for (const auto& a : actions) {
        if constexpr (std::is_constructible_v<detail::zk::op, T>) {
            if (const auto* op = std::get_if<detail::zk::op>(&a))
                if (const auto* t = std::get_if<T>(op)) return t;
        } else if (const auto* t = std::get_if<T>(&a)) {
            return t;
        }
    }
    return nullptr;
}

/// The reply of the op `id` that failed with e.
inline detail::zk::reply failed_reply(detail::zk::ticket id, errc e) {
    detail::zk::reply r;
    r.id = id;
    r.ec = make_error_code(e);
    return r;
}

/// The reply of a read or write `id` that found or made its node: a stat, and no error.
inline detail::zk::reply present_reply(detail::zk::ticket id) {
    detail::zk::reply r;
    r.id = id;
    r.stat = zkr::stat{};
    return r;
}

/// The reply of an exists `id` that found no node: no stat, and no error.
inline detail::zk::reply absent_reply(detail::zk::ticket id) {
    detail::zk::reply r;
    r.id = id;
    return r;
}

}  // namespace zkr::test
