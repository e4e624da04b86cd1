// Fault injection for tests (client_hooks.hpp: lose_next_replies, expire_next_replies): the next n
// replies that succeed become a failure, as if the connection had dropped after the server applied
// the request, or the server had answered for a session it had closed. A decorator on the
// connection's replies: the first hook call installs it, and a connection without it (every one
// outside the tests) pays one atomic load per reply.
#pragma once

#include <zookeeper/zookeeper.h>

#include <atomic>

namespace zkr::detail {

class reply_faults {
public:
    /// From any thread: the next n successful replies become `code` (a ZooKeeper C error).
    void arm(int code, int n) noexcept {
        code_.store(code, std::memory_order_relaxed);
        left_.store(n, std::memory_order_release);
    }
    /// The network thread, for each reply: what a reply with rc becomes. A success takes one
    /// of the armed faults, while any is left; a failure stays as it is.
    int filter(int rc) noexcept {
        if (rc != ZOK) return rc;
        int left = left_.load(std::memory_order_acquire);
        while (left > 0)
            if (left_.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel)) return code_.load(std::memory_order_relaxed);
        return rc;
    }

private:
    std::atomic<int> left_{0};
    std::atomic<int> code_{ZOK};
};

}  // namespace zkr::detail
