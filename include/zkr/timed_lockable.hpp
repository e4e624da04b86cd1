// zkr::timed_lockable: try_lock_for and try_lock_until for a lock with bool acquire(milliseconds).
#pragma once

#include <algorithm>
#include <chrono>

namespace zkr {

/**
 * Gives a lock whose `bool acquire(std::chrono::milliseconds)` waits at most that long the two
 * timed members of the standard's TimedLockable, so that std::unique_lock's timed constructors
 * and std::timed_mutex-style code work with it. Used by interprocess_mutex, fair_lock and
 * interprocess_semaphore_mutex.
 */
template <typename Lock>
class timed_lockable {
public:
    /// acquire(d), with d rounded up to whole milliseconds; a duration at or below zero tries once.
    template <typename Rep, typename Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& d) {
        const auto ms = std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(d));
        return static_cast<Lock&>(*this).acquire(ms);
    }
    /// try_lock_for(t - now): a time already past tries once.
    template <typename Clock, typename Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t) {
        return try_lock_for(t - Clock::now());
    }
};

}  // namespace zkr
