// A move-only std::function (std::move_only_function is C++23): completion handlers are move-only.
// A callable of up to inline_size bytes that moves without throwing is kept inside, with no heap
// allocation: most completions are a shared pointer and a ticket or two, and a lock cycle made a
// dozen of them (issue 48). A larger one goes on the heap, as before.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace zkr::detail {

template <typename Signature>
class unique_function;

template <typename R, typename... Args>
class unique_function<R(Args...)> {
public:
    /// Room for a callable kept inside: a shared pointer and a std::string beside it fit.
    static constexpr std::size_t inline_size = 7 * sizeof(void*);

    unique_function() noexcept = default;
    unique_function(std::nullptr_t) noexcept {}
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
    unique_function(F&& f) {
        using T = std::decay_t<F>;
        if constexpr (fits_inline<T>) {
            ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
        } else {
            ::new (static_cast<void*>(storage_)) T*(new T(std::forward<F>(f)));
        }
        ops_ = &ops_for<T>;
    }
    unique_function(unique_function&& other) noexcept { take(other); }
    unique_function& operator=(unique_function&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    unique_function& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    unique_function(const unique_function&) = delete;
    unique_function& operator=(const unique_function&) = delete;
    ~unique_function() { reset(); }

    R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }
    explicit operator bool() const noexcept { return ops_ != nullptr; }

private:
    template <typename T>
    static constexpr bool fits_inline = sizeof(T) <= inline_size && alignof(T) <= alignof(std::max_align_t) &&
                                        std::is_nothrow_move_constructible_v<T>;

    struct operations {
        R (*call)(void* storage, Args&&... args);
        void (*move)(void* from, void* to) noexcept;  // constructs at `to`, destroys at `from`
        void (*destroy)(void* storage) noexcept;
    };

    template <typename T>
    static T& target(void* storage) noexcept {
        if constexpr (fits_inline<T>) return *std::launder(static_cast<T*>(storage));
        else return **std::launder(static_cast<T**>(storage));
    }

    template <typename T>
    static constexpr operations ops_for{
        [](void* s, Args&&... args) -> R { return target<T>(s)(std::forward<Args>(args)...); },
        [](void* from, void* to) noexcept {
            if constexpr (fits_inline<T>) {
                T& f = target<T>(from);
                ::new (to) T(std::move(f));
                f.~T();
            } else {
                ::new (to) T*(*std::launder(static_cast<T**>(from)));
            }
        },
        [](void* s) noexcept {
            if constexpr (fits_inline<T>) target<T>(s).~T();
            else delete &target<T>(s);
        },
    };

    void take(unique_function& other) noexcept {
        if (!other.ops_) return;
        other.ops_->move(other.storage_, storage_);
        ops_ = std::exchange(other.ops_, nullptr);
    }
    void reset() noexcept {
        if (const auto* ops = std::exchange(ops_, nullptr)) ops->destroy(storage_);
    }

    alignas(std::max_align_t) unsigned char storage_[inline_size];
    const operations* ops_ = nullptr;
};

}  // namespace zkr::detail
