#include "handler_slot.hpp"

#include "zkr_catch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <array>

using zkr::detail::handler_slot;
using zkr::detail::slot_allocator;

namespace {
// A handler that names the slot's allocator, as the connection's drain does.
struct slot_handler {
    handler_slot* slot;
    int* runs;
    using allocator_type = slot_allocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(*slot); }
    void operator()() const { ++*runs; }
};
}  // namespace

TEST_CASE("handler slot: two allocations at once never share memory, whatever the build") {
    handler_slot slot;
    slot_allocator<std::array<char, 64>> a(slot);
    auto* first = a.allocate(1);
    auto* second = a.allocate(1);  // the room is taken (or, sanitized, never used): the heap
    CHECK(static_cast<void*>(first) != static_cast<void*>(second));
    a.deallocate(second, 1);
    a.deallocate(first, 1);
    int elsewhere = 0;
    CHECK_FALSE(slot.give_back(&elsewhere));  // not the room: nothing freed
}

#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("handler slot: the room holds one block at a time, and is used again once given back") {
    handler_slot slot;
    void* room = slot.take(64);
    REQUIRE(room);
    CHECK_FALSE(slot.take(64));  // taken
    CHECK(slot.give_back(room));
    CHECK_FALSE(slot.take(1000));  // too large for it
    CHECK(slot.take(64) == room);
}

TEST_CASE("handler slot: Asio builds a posted handler's operation in the room, and frees it before the handler runs") {
    boost::asio::io_context io;
    handler_slot slot;
    int runs = 0;
    for (int i = 0; i < 3; ++i) {
        boost::asio::post(io, slot_handler{&slot, &runs});
        CHECK_FALSE(slot.take(1));  // the queued operation is in the room
        io.restart();
        io.run();
        CHECK(runs == i + 1);
    }
    void* room = slot.take(1);
    CHECK(room);  // free again once the handler ran
    slot.give_back(room);
}
#endif
