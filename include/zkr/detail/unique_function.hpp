// A move-only std::function (std::move_only_function is C++23): completion handlers are move-only.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace zkr::detail {

template <typename Signature>
class unique_function;

template <typename R, typename... Args>
class unique_function<R(Args...)> {
    struct callable {
        virtual ~callable() = default;
        virtual R call(Args... args) = 0;
    };
    template <typename F>
    struct holder final : callable {
        F f;
        explicit holder(F&& fn) : f(std::move(fn)) {}
        R call(Args... args) override { return f(std::forward<Args>(args)...); }
    };
    std::unique_ptr<callable> p_;

public:
    unique_function() = default;
    unique_function(std::nullptr_t) {}
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
    unique_function(F&& f) : p_(std::make_unique<holder<std::decay_t<F>>>(std::forward<F>(f))) {}

    R operator()(Args... args) { return p_->call(std::forward<Args>(args)...); }
    explicit operator bool() const noexcept { return static_cast<bool>(p_); }
};

}  // namespace zkr::detail
