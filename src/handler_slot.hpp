// Room for one Asio handler at a time, used again without a lock or an allocation: for a post
// that is never outstanding twice (the submission queue's drain: scheduled once until the network
// thread drains). A second allocation while the room is taken, or one too large for it, goes to
// operator new as usual, so a misuse costs an allocation, never memory shared by two handlers.
// An address-sanitized build always allocates, so that a use after free is still caught.
#pragma once

#include <atomic>
#include <cstddef>
#include <new>

namespace zkr::detail {

class handler_slot {
public:
    /// The room, when it is free and size fits; null otherwise. Any thread.
    void* take(std::size_t size) noexcept {
#if defined(__SANITIZE_ADDRESS__)
        (void)size;
        return nullptr;
#else
        if (size > sizeof(room_) || taken_.exchange(true, std::memory_order_acquire)) return nullptr;
        return room_;
#endif
    }
    /// Whether the room is free now (another thread may take it before the caller does: its
    /// allocation then goes to operator new). Any thread.
    bool idle() const noexcept { return !taken_.load(std::memory_order_relaxed); }
    /// Frees the room if p is it (false: p is not the room's). Any thread.
    bool give_back(void* p) noexcept {
        if (p != static_cast<void*>(room_)) return false;
        taken_.store(false, std::memory_order_release);
        return true;
    }

private:
    alignas(std::max_align_t) unsigned char room_[128];
    std::atomic<bool> taken_{false};
};

/// The allocator a handler names (its allocator_type and get_allocator()) so that Asio builds its
/// operation in a handler_slot.
template <typename T>
struct slot_allocator {
    using value_type = T;

    explicit slot_allocator(handler_slot& s) noexcept : slot(&s) {}
    template <typename U>
    slot_allocator(const slot_allocator<U>& other) noexcept : slot(other.slot) {}

    T* allocate(std::size_t n) {
        if constexpr (alignof(T) <= alignof(std::max_align_t))
            if (void* p = slot->take(n * sizeof(T))) return static_cast<T*>(p);
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t) noexcept {
        if (!slot->give_back(p)) ::operator delete(p);
    }
    template <typename U>
    bool operator==(const slot_allocator<U>& other) const noexcept { return slot == other.slot; }
    template <typename U>
    bool operator!=(const slot_allocator<U>& other) const noexcept { return slot != other.slot; }

    handler_slot* slot;
};

}  // namespace zkr::detail
