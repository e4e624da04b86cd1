// The lock machine driven by script: expected actions event by event, and every I/O step failed
// in turn (test/unit/machine_script.hpp).
#include "../../recipes/queue/read_write_rule.hpp"
#include "machine_script.hpp"

using namespace zkr;
using namespace zkr::test;
using zkr::read_write_rule;

namespace {
const lowest_n_rule mutex_rule{1};
const lowest_n_rule two_holders{2};
const lease_rule three_leases([] { return 3; }, fixed_max_tag(3));

std::string lock_node(int seq) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%d-lock-%010d", seq, seq);
    return buf;
}
std::string named(const char* name, int seq) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%d-%s%010d", seq, name, seq);
    return buf;
}

const std::initializer_list<boost::system::error_code> errors = {
    make_error_code(errc::connection_loss),   // retryable: the retries gave up
    make_error_code(errc::session_expired),
    make_error_code(errc::no_auth),           // final
    make_error_code(errc::no_node),
};
}  // namespace

TEST_CASE("lock machine script: a waiter is told to wait, watches the node ahead, and holds when it goes") {
    machine_script s({&mutex_rule, std::nullopt});
    s.feed(lock_in::start{true, 77});
    const auto create = s.expect<lock_out::create>().ticket;
    const auto list = s.expect<lock_out::list>().ticket;
    s.expect_none<lock_out::deadline_after>();
    s.feed(lock_in::created{create, {}, "/l/" + lock_node(2), 1002, 77}).expect<lock_out::queued>();
    s.feed(lock_in::listed{list, {}, {lock_node(1), lock_node(2)}});
    s.expect<lock_out::waiting>();
    const auto watch = s.expect<lock_out::watch_node>();
    CHECK(watch.name == lock_node(1));
    s.feed(lock_in::node_read{watch.ticket, {}, 0}).expect_nothing();
    s.feed(lock_in::node_changed{watch.ticket, watch_event_type::node_deleted});
    CHECK(s.expect<lock_out::granted>().token == 1002);
    s.expect_none<lock_out::list>();
    s.feed(lock_in::node_changed{watch.ticket, watch_event_type::node_deleted}).expect_nothing();  // stale: dropped
}

TEST_CASE("lock machine script: every I/O step of an uncontended acquire and release fails in turn, and each run ends cleanly") {
    CHECK(fail_each_step(mutex_rule, {lock_node(1), {}}, errors) >= 3);  // create, list, delete
    CHECK(fail_each_step(three_leases, {named("m3-w1-lease-", 1), {}}, errors) >= 3);
}

TEST_CASE("lock machine script: every I/O step of a contended acquire fails in turn, and each run ends cleanly") {
    CHECK(fail_each_step(mutex_rule, {lock_node(3), {lock_node(1), lock_node(2)}}, errors) >= 5);
    CHECK(fail_each_step(two_holders, {lock_node(4), {lock_node(1), lock_node(2), lock_node(3)}}, errors) >= 5);
    CHECK(fail_each_step(reader, {named("__READ__", 4), {named("__READ__", 1), named("__WRIT__", 2), named("__READ__", 3)}}, errors) >= 4);
    CHECK(fail_each_step(writer, {named("__WRIT__", 4), {named("__READ__", 1), named("__WRIT__", 2), named("__READ__", 3)}}, errors) >= 5);
}

TEST_CASE("lock machine script: a deadline, a cancel or a closed client before any I/O step's reply ends the acquire cleanly, its node removed") {
    const acquisition_model contended{lock_node(3), {lock_node(1), lock_node(2)}};
    const acquisition_model writer_behind_readers{named("__WRIT__", 4), {named("__READ__", 1), named("__READ__", 3)}};
    for (const auto* model : {&contended, &writer_behind_readers}) {
        const lock_rule& rule = model == &contended ? static_cast<const lock_rule&>(mutex_rule) : writer;
        interrupt_each_step(rule, *model, lock_in::deadline{}, boost::system::error_code{});
        interrupt_each_step(rule, *model, lock_in::cancel{}, make_error_code(errc::cancelled));
        interrupt_each_step(rule, *model, lock_in::connection{connection_state::closed, 0}, make_error_code(errc::closed));
    }
}

TEST_CASE("lock machine script: a try behind a holder gives up at once and removes its node, whichever I/O step fails") {
    acquisition_model model{lock_node(3), {lock_node(1)}};
    model.timeout = std::chrono::milliseconds(0);
    const auto r = run_acquisition(mutex_rule, model, -1, {});
    CHECK_FALSE(r.granted);
    CHECK_FALSE(r.not_granted);  // "not acquired": someone else holds
    check_clean(r);
    CHECK(fail_each_step(mutex_rule, model, errors) >= 2);  // create, list
    model.ahead.clear();  // uncontended: the try holds
    CHECK(run_acquisition(mutex_rule, model, -1, {}).granted);
}
