// zkr::state_subscription: the registration of a listener, ended by its destructor.
#pragma once

#include <functional>
#include <utility>

namespace zkr {

/// An RAII registration of a listener (client state, hold, shared count): destroying it (or
/// unsubscribe()) stops new calls.
class state_subscription {
public:
    state_subscription() = default;
    /// remove runs once, on unsubscribe() or destruction.
    explicit state_subscription(std::function<void()> remove) : remove_(std::move(remove)) {}
    /// Takes over the registration; `other` then holds none.
    state_subscription(state_subscription&&) noexcept = default;
    /// Ends this registration (as unsubscribe()), then takes over other's.
    state_subscription& operator=(state_subscription&& other) noexcept;
    state_subscription(const state_subscription&) = delete;
    state_subscription& operator=(const state_subscription&) = delete;
    ~state_subscription();
    /// After this returns no new call of the listener starts (one running on the callback
    /// thread may still finish).
    void unsubscribe() noexcept;

private:
    std::function<void()> remove_;
};

}  // namespace zkr
