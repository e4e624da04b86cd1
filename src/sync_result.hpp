// How one result travels from the network thread to a caller blocked in a sync call.
#pragma once

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace zkr::detail {

/// Callers blocked in a sync call right now, in the whole process. A caller spins only while
/// this is at most one per two cores. When more threads of the process wait, the server and their
/// network threads need every core, and a spinning caller takes one from them: measured, W2 (8
/// sessions, one process) lost 10 to 15% with spinning callers, while W1 (one caller) gained 1.26x.
inline std::atomic<int>& blocked_callers() noexcept {
    static std::atomic<int> n{0};
    return n;
}

/// The cores the calling thread may run on (its affinity mask: taskset, a container's cpuset),
/// not the machine's: a process given 2 cores of a 64-core host must not let 32 callers spin.
inline int cores_allowed() noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Read once, by the first blocked call of the process.
inline int spinning_callers_limit() noexcept {
    static const int n = std::max(1, cores_allowed() / 2);
    return n;
}

/// Set on a thread that has just handed a result to a caller that was spinning for it: that
/// caller is awake and most likely sends its next request within microseconds (the release
/// after an acquire, the next acquire after a release). The network thread then polls for it
/// briefly instead of sleeping in epoll, which would cost a wake-up on that request.
inline thread_local bool follow_up_expected = false;

/// set() once, on any thread; get() once, on the waiting thread; then reset() for another round.
///
/// get() first spins (yielding its core) for up to `spin` and only then sleeps on a futex. A reply
/// on a local network comes within a round trip, and a caller that is still awake takes it without
/// a thread wake-up, which costs tens of microseconds on a loaded machine.
///
/// The futex is called directly (issue 48). A mutex and a condition variable cost about 700
/// instructions a call on the two threads. `std::atomic::wait` costs less but spins first on its
/// own, with four sched_yield, whatever blocked_callers() says: W2 (8 callers in a process on 2
/// cores) lost 5 to 16% of its rate, and its CPU per cycle rose by 14 to 30%.
///
/// stop_spinning() ends the spin early when the wait is known to be long (a lock acquire that
/// queued behind a holder).
template <class T>
class sync_result {
public:
    /// Builds the value in place: a response is moved once on its way to the caller, not through
    /// a temporary and a parameter (each move of a response and its destruction cost about 70
    /// instructions, issue 48).
    template <class... Args>
    void set(Args&&... args) {
        if (phase_.load(std::memory_order_relaxed) == waiting::spinning) follow_up_expected = true;
        value_.emplace(std::forward<Args>(args)...);
        // A wake only for a caller that sleeps. After the exchange the caller may return, and
        // reset or free this object (run_sync's is a thread's own), so the wake uses only the
        // address taken before it, which a private futex does not read.
        int* const word = futex_word();
        if (state_.exchange(ready, std::memory_order_acq_rel) == sleeping) futex(word, FUTEX_WAKE_PRIVATE, 1);
    }

    void stop_spinning() noexcept { stop_spinning_.store(true, std::memory_order_relaxed); }

    /// Ready for another set() and get(), once get() has returned. Safe then: set()'s last touch
    /// of this object is the exchange that get() waited for (its futex wake after it names only
    /// the address, and reaches the next wait, if at all, as a spurious wake-up, which the wait's
    /// loop absorbs).
    void reset() noexcept {
        value_.reset();
        stop_spinning_.store(false, std::memory_order_relaxed);
        state_.store(empty, std::memory_order_relaxed);
    }

    /// How the caller waits right now: not yet (or no longer) in get(), spinning, or asleep (past
    /// its spin). Tests wait for a phase instead of guessing it from a sleep.
    enum class waiting : unsigned char { not_in_get, spinning, asleep };
    waiting phase() const noexcept { return phase_.load(std::memory_order_relaxed); }

    /// The value, left in this object for the caller to move from.
    T& get(std::chrono::microseconds spin) {
        auto& blocked = blocked_callers();
        const int others = blocked.fetch_add(1, std::memory_order_relaxed);
        if (spin.count() > 0 && others < spinning_callers_limit()) {
            phase_.store(waiting::spinning, std::memory_order_relaxed);
            const auto until = std::chrono::steady_clock::now() + spin;
            while (state_.load(std::memory_order_acquire) != ready && !stop_spinning_.load(std::memory_order_relaxed) &&
                   std::chrono::steady_clock::now() < until)
                std::this_thread::yield();
            phase_.store(waiting::asleep, std::memory_order_relaxed);  // or about to return
        }
        if (int s = empty; state_.compare_exchange_strong(s, sleeping, std::memory_order_acquire)) {
            phase_.store(waiting::asleep, std::memory_order_relaxed);
            // Returns at once if set() came first (the word is no longer `sleeping`), and may
            // return early (a signal): the loop looks again.
            do futex(futex_word(), FUTEX_WAIT_PRIVATE, sleeping);
            while (state_.load(std::memory_order_acquire) != ready);
        }
        phase_.store(waiting::not_in_get, std::memory_order_relaxed);
        blocked.fetch_sub(1, std::memory_order_relaxed);
        return *value_;
    }

private:
    std::optional<T> value_;
    enum : int { empty, ready, sleeping };
    static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);

    int* futex_word() noexcept { return reinterpret_cast<int*>(&state_); }
    static void futex(int* word, int op, int value) noexcept { ::syscall(SYS_futex, word, op, value, nullptr, nullptr, 0); }

    std::atomic<int> state_{empty};
    std::atomic<bool> stop_spinning_{false};
    std::atomic<waiting> phase_{waiting::not_in_get};
};

}  // namespace zkr::detail
