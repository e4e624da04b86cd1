// Lock caching's decisions (recipes/queue/hold_cache_machine.hpp), without a server.
#include "../../recipes/queue/hold_cache_machine.hpp"

#include "zkr_catch.hpp"

using zkr::detail::hold_cache_machine;
using action = hold_cache_machine::action;
using phase = hold_cache_machine::phase;

namespace {
// A machine with a hold kept and its watch armed (one release, one listing that found us alone).
hold_cache_machine kept() {
    hold_cache_machine m;
    REQUIRE(m.released(true, false) == action::list);
    REQUIRE(m.listed(true) == action::none);
    REQUIRE(m.current() == phase::kept);
    return m;
}
}  // namespace

TEST_CASE("lock cache: the first release lists with a watch, and keeps the node only when it is alone") {
    hold_cache_machine m;
    CHECK(m.released(true, false) == action::list);
    CHECK(m.current() == phase::listing);
    CHECK(m.listed(true) == action::none);
    CHECK(m.current() == phase::kept);
    CHECK(m.watch_armed());

    hold_cache_machine crowded;
    CHECK(crowded.released(true, false) == action::list);
    CHECK(crowded.listed(false) == action::let_go);  // someone queued while we held (or the listing failed)
    CHECK(crowded.current() == phase::empty);
    CHECK_FALSE(crowded.watch_armed());
}

TEST_CASE("lock cache: a kept node is lent with no request, and comes back with none while the watch has not fired") {
    auto m = kept();
    for (int cycle = 0; cycle < 3; ++cycle) {
        CHECK(m.acquire(true) == action::grant);
        CHECK(m.current() == phase::lent);
        CHECK(m.acquire(true) == action::none);  // lent: another thread queues as without caching
        CHECK(m.released(true, true) == action::none);
        CHECK(m.current() == phase::kept);
    }
}

TEST_CASE("lock cache: once the watch fires, a kept node goes at once and a lent one at its release") {
    auto m = kept();
    CHECK(m.changed() == action::let_go);
    CHECK(m.current() == phase::empty);
    CHECK(m.acquire(true) == action::none);  // nothing kept: the acquire queues

    auto lent = kept();
    CHECK(lent.acquire(true) == action::grant);
    CHECK(lent.changed() == action::none);  // the holder here keeps its hold
    CHECK_FALSE(lent.watch_armed());
    CHECK(lent.released(true, true) == action::release_now);  // someone queued: give way, without a listing first
    CHECK(lent.current() == phase::empty);
    CHECK(lent.released(true, false) == action::list);  // (a later hold keeps again if it is alone)
}

TEST_CASE("lock cache: a hold that does not read held is never kept, nor lent") {
    hold_cache_machine m;
    CHECK(m.released(false, false) == action::release_now);
    CHECK(m.current() == phase::empty);

    auto doubtful = kept();
    CHECK(doubtful.acquire(false) == action::let_go);  // connection suspended, or silent past 2/3 of the session
    CHECK(doubtful.current() == phase::empty);

    auto lost_while_lent = kept();
    CHECK(lost_while_lent.acquire(true) == action::grant);
    CHECK(lost_while_lent.released(false, true) == action::release_now);
    CHECK(lost_while_lent.current() == phase::empty);
}

TEST_CASE("lock cache: a change during the listing lets the node go, and the listing's late answer changes nothing") {
    hold_cache_machine m;
    CHECK(m.released(true, false) == action::list);
    CHECK(m.changed() == action::let_go);
    CHECK(m.current() == phase::empty);
    CHECK(m.listed(true) == action::none);
    CHECK(m.current() == phase::empty);
}

TEST_CASE("lock cache: a hold that is not the one lent, or one released while another is kept, is released as without caching") {
    auto m = kept();
    CHECK(m.released(true, false) == action::release_now);  // (a second hold while one is kept)
    CHECK(m.current() == phase::kept);

    auto lent = kept();
    CHECK(lent.acquire(true) == action::grant);
    CHECK(lent.released(true, false) == action::release_now);  // (another hold, after the lent one was lost)
    CHECK(lent.current() == phase::lent);
    CHECK(lent.released(true, true) == action::none);
}

TEST_CASE("lock cache: closing lets a kept node go, and a lent one is released as without caching") {
    auto m = kept();
    CHECK(m.close() == action::let_go);
    CHECK(m.current() == phase::empty);
    CHECK(m.released(true, false) == action::release_now);

    hold_cache_machine listing;
    CHECK(listing.released(true, false) == action::list);
    CHECK(listing.close() == action::let_go);

    auto lent = kept();
    CHECK(lent.acquire(true) == action::grant);
    CHECK(lent.close() == action::none);
    CHECK(lent.released(true, true) == action::release_now);
}
