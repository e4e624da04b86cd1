#include "connection_internal.hpp"
#include "request_depot.hpp"

#include "zkr_catch.hpp"

#include <memory>

using zkr::detail::inflight;
using zkr::detail::operation;
using zkr::detail::request_depot;

namespace {
std::shared_ptr<operation> an_operation() { return std::make_shared<operation>(); }
}  // namespace

TEST_CASE("request depot: a record sent is found by its context once, and counted") {
    request_depot d;
    auto op = an_operation();
    auto f = d.new_record();
    f->op = op;
    auto* t = d.track(std::move(f));
    CHECK(d.sent() == 1);
    auto back = d.take(t);
    REQUIRE(back);
    CHECK(back->op == op);
    CHECK_FALSE(d.take(t));  // its callback ran: nothing more to claim
}

TEST_CASE("request depot: a record let go is blanked and used again") {
    request_depot d;
    zkr::detail::watch_registry::entry watch;
    auto f = d.new_record();
    f->conn = reinterpret_cast<zkr::detail::connection*>(&d);  // (never followed)
    f->op = an_operation();
    f->what = inflight::step::orphan_list;
    f->abandoned = true;
    f->watch = &watch;
    f->acl.assign(zkr::open_acl_unsafe());
    f->multi.build({zkr::multi_op::remove("/a")}, {});
    f->child = "/a/_c_1-n";
    f->path = "/a";
    auto parent = an_operation();
    f->parent_of = parent;
    auto* raw = d.track(std::move(f));
    d.take(raw).reset();
    auto again = d.new_record();
    CHECK(again.get() == raw);
    CHECK_FALSE(again->conn);
    CHECK_FALSE(again->op);
    CHECK(again->what == inflight::step::main);
    CHECK_FALSE(again->abandoned);
    CHECK_FALSE(again->watch);
    CHECK(again->acl.get()->count == 0);
    CHECK(again->multi.source.empty());
    CHECK(again->multi.ops.empty());
    CHECK(again->multi.results.empty());
    CHECK(again->child.empty());
    CHECK(again->path.empty());
    CHECK(again->parent_of.expired());
    CHECK(parent.use_count() == 1);
}

TEST_CASE("request depot: a dropped connection abandons each request in flight once") {
    request_depot d;
    auto a = an_operation();
    auto b = an_operation();
    auto fa = d.new_record();
    fa->op = a;
    auto* ta = d.track(std::move(fa));
    auto fb = d.new_record();
    fb->op = b;
    d.track(std::move(fb));
    d.track(d.new_record());  // fire and forget (a parent's create): no operation to fail
    auto failed = d.abandon_inflight();
    REQUIRE(failed.size() == 2);
    CHECK(((failed[0] == a && failed[1] == b) || (failed[0] == b && failed[1] == a)));
    CHECK(d.abandon_inflight().empty());  // the next drop does not fail them again
    // The late callback still finds its record, marked, and only frees it.
    auto late = d.take(ta);
    REQUIRE(late);
    CHECK(late->abandoned);
}

TEST_CASE("request depot: the handle's close takes every record, and the depot has none left") {
    request_depot d;
    auto* t = d.track(d.new_record());
    d.track(d.new_record());
    auto all = d.take_inflight();
    CHECK(all.size() == 2);
    CHECK_FALSE(d.take(t));
    CHECK(d.abandon_inflight().empty());
}

TEST_CASE("request depot: waiting and sleeping requests end once") {
    request_depot d;
    auto a = an_operation();
    auto b = an_operation();
    d.wait(a);
    d.wait(b);
    CHECK(d.stop_waiting(a));        // its connection timeout ran out
    CHECK_FALSE(d.stop_waiting(a));  // (a second end finds nothing)
    auto waiting = d.take_waiting();  // connected: the rest are sent
    REQUIRE(waiting.size() == 1);
    CHECK(waiting.front() == b);
    CHECK_FALSE(d.stop_waiting(b));

    d.sleep(a);
    d.sleep(b);
    CHECK(d.wake(a));
    CHECK_FALSE(d.wake(a));
    auto sleeping = d.take_sleeping();  // the close fails the rest
    CHECK(sleeping.size() == 1);
    CHECK(sleeping.count(b) == 1);
    CHECK_FALSE(d.wake(b));
}
