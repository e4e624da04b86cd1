// The lock machine's face in ZooKeeper's vocabulary (recipes/queue/zk_lock_machine.hpp): which
// requests its intents become, and what each reply, watch event and timer tells the machine.
#include "../../recipes/queue/zk_lock_machine.hpp"

#include "zk_actions.hpp"
#include "zkr_catch.hpp"

#include <cstdio>

namespace {

// (Declarations, not `using namespace zkr`: in a unity batch a directive would reach the files
// after this one, where zkr::stat makes ::stat ambiguous.)
using namespace zkr::detail;
using zkr::connection_state;
using zkr::create_mode;
using zkr::errc;
using zkr::hold_state;
using zkr::lock_rule;
using zkr::lost_cause;
using zkr::lowest_n_rule;
using zkr::revocation_signal;
using zkr::watch_event_type;
using zkr::test::find_action;

const lowest_n_rule one{1};
const lowest_n_rule two{2};
constexpr std::int64_t session = 77;
constexpr std::int64_t someone_else = 88;

std::string node(int seq) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%d-lock-%010d", seq, seq);
    return buf;
}

zk_lock_machine::config config_of(const lock_rule& rule, std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                                  bool revocable = false) {
    zk_lock_machine::config c;
    c.decisions = {.rule = &rule, .timeout = timeout, .context = {}, .revocable = revocable};
    c.lock_path = std::make_shared<const std::string>("/l");
    c.create_path = std::make_shared<const std::string>("/l/lock-");
    c.data = "me";
    return c;
}

const zk::get_data* read_of(const zk_lock_actions& actions, const std::string& path) {
    for (const auto& a : actions)
        if (const auto* op = std::get_if<zk::op>(&a))
            if (const auto* read = std::get_if<zk::get_data>(op); read && read->path == path) return read;
    return nullptr;
}

std::size_t ops_in(const zk_lock_actions& actions) {
    std::size_t n = 0;
    for (const auto& a : actions) n += std::holds_alternative<zk::op>(a) ? 1 : 0;
    return n;
}

// What a background request's failure comes to: one notice, nothing decided.
const lock_out::notice& only_notice(const zk_lock_actions& actions) {
    REQUIRE(actions.size() == 1);
    return std::get<lock_out::notice>(actions.front());
}

zk::reply reply_to(zk::ticket id, boost::system::error_code ec = {}) {
    zk::reply r;
    r.id = id;
    r.ec = ec;
    return r;
}

zk::reply node_reply(zk::ticket id, std::int64_t owner, std::int32_t version = 0, std::string data = {}) {
    auto r = reply_to(id);
    r.stat = zkr::stat{};
    r.stat->ephemeral_owner = owner;
    r.stat->version = version;
    r.data = std::move(data);
    return r;
}

// A machine whose node `ours` was created and listed among `queue`; `last` holds the actions of
// that listing.
struct listed {
    zk_lock_machine m;
    zk_lock_actions last;

    listed(zk_lock_machine::config c, int ours, const std::vector<int>& queue) : m(std::move(c)) {
        auto& a = m.resume(lock_in::start_after{true, session});
        const auto create = find_action<zk::create>(a)->id;
        const auto list = find_action<zk::get_children>(a)->id;
        auto created = reply_to(create);
        created.path = "/l/" + node(ours);
        created.stat = zkr::stat{};
        created.stat->czxid = 1000 + ours;
        created.stat->ephemeral_owner = session;
        REQUIRE(find_action<lock_out::queued>(m.resume(std::move(created))));
        auto listing = reply_to(list);
        for (int q : queue) listing.children.push_back(node(q));
        last = m.resume(std::move(listing));
    }
};

}  // namespace

TEST_CASE("zk lock machine: an uncontended cycle is a create and a listing sent together, then one delete") {
    zk_lock_machine m(config_of(one));
    const auto start = m.resume(lock_in::start_after{true, session});
    REQUIRE(ops_in(start) == 2);  // one round trip: the listing goes out with the create
    const auto* create = find_action<zk::create>(start);
    REQUIRE(create);
    CHECK(create->path == "/l/lock-");
    CHECK(create->data == "me");
    CHECK(create->mode == create_mode::ephemeral_sequential);
    CHECK(create->protect);
    CHECK(create->parents);
    const auto* list = find_action<zk::get_children>(start);
    REQUIRE(list);
    CHECK(list->path == "/l");
    CHECK_FALSE(list->watch);

    auto created = reply_to(create->id);
    created.path = "/l/" + node(3);
    created.stat = zkr::stat{};
    created.stat->czxid = 1003;
    created.stat->ephemeral_owner = session;
    const auto* queued = find_action<lock_out::queued>(m.resume(std::move(created)));
    REQUIRE(queued);
    CHECK(queued->path == "/l/" + node(3));

    auto listing = reply_to(list->id);
    listing.children = {node(3)};
    const auto& granted_now = m.resume(std::move(listing));
    const auto* granted = find_action<lock_out::granted>(granted_now);
    REQUIRE(granted);
    CHECK(granted->token == 1003);
    CHECK(granted->session == session);
    const auto* later = find_action<zk::after>(granted_now);
    REQUIRE(later);  // the own-node watch waits: short holds cost nothing
    CHECK(later->delay == own_watch_delay);

    const auto& release = m.resume(lock_in::release{1});
    const auto* del = find_action<zk::remove>(release);
    REQUIRE(del);
    CHECK(del->path == "/l/" + node(3));
    CHECK(del->once);  // fails fast: a guard's destructor must not wait through an outage
    CHECK_FALSE(del->guaranteed);
    SECTION("a release without a connection is told as pending, with our node") {
        const auto& pending = m.resume(reply_to(del->id, make_error_code(errc::connection_loss)));
        const auto* note = find_action<lock_out::notice>(pending);
        REQUIRE(note);
        CHECK(note->what == lock_out::notice::release_pending);
        CHECK(note->path == "/l/" + node(3));
        return;
    }
    const auto& done = m.resume(reply_to(del->id));
    CHECK_FALSE(find_action<lock_out::notice>(done));
    REQUIRE(find_action<lock_out::release_done>(done));
    CHECK_FALSE(find_action<lock_out::release_done>(done)->ec);
    CHECK(m.finished());
}

TEST_CASE("zk lock machine: the timeout counts from when the caller asked") {
    zk_lock_machine m(config_of(one, std::chrono::milliseconds(500)));
    const auto& a = m.resume(lock_in::start_after{true, session, std::chrono::milliseconds(200)});
    const auto* deadline = find_action<zk::after>(a);
    REQUIRE(deadline);
    CHECK(deadline->delay == std::chrono::milliseconds(300));
    CHECK(m.deadline_ticket() == deadline->id);
    const auto id = deadline->id;
    const auto& out = m.resume(zk::timer_due{id});
    REQUIRE(find_action<lock_out::not_granted>(out));
    CHECK_FALSE(find_action<lock_out::not_granted>(out)->ec);  // timed out, not failed
    CHECK(m.resume(zk::timer_due{id}).empty());  // a timer runs out once

    zk_lock_machine late(config_of(one, std::chrono::milliseconds(500)));
    const auto* none_left = find_action<zk::after>(late.resume(lock_in::start_after{true, session, std::chrono::milliseconds(900)}));
    REQUIRE(none_left);
    CHECK(none_left->delay == std::chrono::milliseconds(0));
}

TEST_CASE("zk lock machine: a node ahead of our own session that no acquire of the client has is deleted, guaranteed") {
    // (The client's answer: its session's, and no acquire of it has the node.)
    bool known = false;
    auto c = config_of(one);
    std::string asked;
    c.forgotten = [&](const std::string& path, std::int64_t owner) {
        asked = path;
        return owner == session && !known;
    };
    listed l(std::move(c), 5, {3, 5});
    const auto* read = find_action<zk::get_data>(l.last);
    REQUIRE(read);
    CHECK(read->path == "/l/" + node(3));
    CHECK(read->watch);

    SECTION("forgotten: a stray") {
        const auto& out = l.m.resume(node_reply(read->id, session));
        CHECK(asked == "/l/" + node(3));
        const auto* remove = find_action<zk::remove>(out);
        REQUIRE(remove);
        CHECK(remove->path == "/l/" + node(3));
        CHECK(remove->guaranteed);
        const auto* note = find_action<lock_out::notice>(out);
        REQUIRE(note);
        CHECK(note->what == lock_out::notice::stray_found);
        CHECK(note->path == "/l/" + node(3));
        SECTION("its delete failing is told, not decided on") {
            CHECK(only_notice(l.m.resume(reply_to(remove->id, make_error_code(errc::closed)))).what == lock_out::notice::remove_failed);
        }
    }
    SECTION("another acquire of this client has it") {
        known = true;
        const auto& out = l.m.resume(node_reply(read->id, session));
        CHECK_FALSE(find_action<zk::remove>(out));
        CHECK_FALSE(find_action<lock_out::notice>(out));
    }
    SECTION("another session's") {
        const auto& out = l.m.resume(node_reply(read->id, someone_else));
        CHECK(asked == "/l/" + node(3));
        CHECK(out.empty());
    }
    SECTION("a persistent node (no owner): never asked") {
        CHECK(l.m.resume(node_reply(read->id, 0)).empty());
        CHECK(asked.empty());
    }
}

TEST_CASE("zk lock machine: a watch event goes to the read that set it") {
    listed l(config_of(one), 5, {3, 5});
    const auto* read = find_action<zk::get_data>(l.last);
    REQUIRE(read);
    const auto id = read->id;
    CHECK(l.m.resume(node_reply(id, someone_else)).empty());
    // The node ahead was deleted: ours holds.
    CHECK(find_action<lock_out::granted>(l.m.resume(zk::watch_fired{id, watch_event_type::node_deleted})));
    CHECK(l.m.resume(zk::watch_fired{id, watch_event_type::node_deleted}).empty());  // a watch fires once
}

TEST_CASE("zk lock machine: a read of a node ahead that finds it gone sets no watch") {
    listed l(config_of(one), 5, {3, 5});
    const auto* read = find_action<zk::get_data>(l.last);
    REQUIRE(read);
    const auto id = read->id;
    CHECK(find_action<lock_out::granted>(l.m.resume(reply_to(id, make_error_code(errc::no_node)))));
    CHECK(l.m.resume(zk::watch_fired{id, watch_event_type::node_deleted}).empty());
}

TEST_CASE("zk lock machine: a waiter ahead that wrote its node has been granted: list again") {
    listed l(config_of(two), 7, {1, 3, 5, 7});
    const auto* read = read_of(l.last, "/l/" + node(5));  // the waiter ahead, whose grant we await
    REQUIRE(read);
    CHECK(find_action<zk::get_children>(l.m.resume(node_reply(read->id, someone_else, /*version=*/1))));
}

TEST_CASE("zk lock machine: a holder others may wait on tells them by a write of its data") {
    listed l(config_of(two), 3, {1, 3});
    REQUIRE(find_action<lock_out::granted>(l.last));
    const auto* touch = find_action<zk::set_data>(l.last);
    REQUIRE(touch);
    CHECK(touch->path == "/l/" + node(3));
    CHECK(touch->data == "me");
    CHECK(touch->version == -1);
    const auto id = touch->id;
    // The write again: the same signal, by a request of its own.
    const auto written_again = [&](const zk_lock_actions& actions) {
        const auto* again = find_action<zk::set_data>(actions);
        REQUIRE(again);
        CHECK(again->path == "/l/" + node(3));
        CHECK(again->data == "me");
        CHECK(again->version == -1);
        CHECK(again->id != id);
    };
    SECTION("a failure is told, with our node; one the connection gave up on is written again at once while connected") {
        // (A retry's sleep outlasted the outage: the failure comes after the reconnection.)
        const auto& actions = l.m.resume(reply_to(id, make_error_code(errc::connection_loss)));
        const auto* note = find_action<lock_out::notice>(actions);
        REQUIRE(note);
        CHECK(note->what == lock_out::notice::grant_signal_failed);
        CHECK(note->path == "/l/" + node(3));
        written_again(actions);
    }
    SECTION("without a connection, it is written again at the session's next connection") {
        l.m.resume(zk::connection_changed{connection_state::suspended, session});
        CHECK(only_notice(l.m.resume(reply_to(id, make_error_code(errc::connection_loss)))).what == lock_out::notice::grant_signal_failed);
        written_again(l.m.resume(zk::connection_changed{connection_state::reconnected, session}));
    }
    SECTION("refused by a read-only server, it is written again once connected to the quorum") {
        l.m.resume(zk::connection_changed{connection_state::read_only, session});
        CHECK(only_notice(l.m.resume(reply_to(id, make_error_code(errc::not_read_only)))).what == lock_out::notice::grant_signal_failed);
        l.m.resume(zk::connection_changed{connection_state::suspended, session});
        written_again(l.m.resume(zk::connection_changed{connection_state::reconnected, session}));
    }
    SECTION("on a new session the hold is lost, and nothing is written") {
        l.m.resume(zk::connection_changed{connection_state::suspended, session});
        l.m.resume(reply_to(id, make_error_code(errc::connection_loss)));
        const auto& actions = l.m.resume(zk::connection_changed{connection_state::connected, session + 1});
        CHECK(find_action<lock_out::hold_changed>(actions));
        CHECK_FALSE(find_action<zk::set_data>(actions));
    }
    SECTION("a failure for good (the node gone) is told, and not written again") {
        CHECK(only_notice(l.m.resume(reply_to(id, make_error_code(errc::no_node)))).what == lock_out::notice::grant_signal_failed);
    }
    SECTION("a success tells nothing") { CHECK(l.m.resume(reply_to(id)).empty()); }
}

TEST_CASE("zk lock machine: the own-node watch is an exists, and finding nothing loses the hold") {
    listed l(config_of(one), 3, {3});
    REQUIRE(find_action<lock_out::granted>(l.last));
    const auto* later = find_action<zk::after>(l.last);
    REQUIRE(later);
    const auto& due = l.m.resume(zk::timer_due{later->id});
    const auto* exists = find_action<zk::exists>(due);
    REQUIRE(exists);
    CHECK(exists->path == "/l/" + node(3));
    CHECK(exists->watch);
    const auto id = exists->id;

    SECTION("there and ours: nothing to tell") {
        CHECK(l.m.resume(node_reply(id, session)).empty());
        SECTION("then deleted") {
            const auto* lost = find_action<lock_out::hold_changed>(l.m.resume(zk::watch_fired{id, watch_event_type::node_deleted}));
            REQUIRE(lost);
            CHECK(lost->state == hold_state::lost);
            CHECK(lost->cause == lost_cause::node_deleted);
        }
    }
    SECTION("gone (an exists of a missing node answers without error and without a stat)") {
        const auto* lost = find_action<lock_out::hold_changed>(l.m.resume(reply_to(id)));
        REQUIRE(lost);
        CHECK(lost->state == hold_state::lost);
        CHECK(lost->cause == lost_cause::node_deleted);
    }
    SECTION("another session's: not ours any more") {
        const auto* lost = find_action<lock_out::hold_changed>(l.m.resume(node_reply(id, someone_else)));
        REQUIRE(lost);
        CHECK(lost->state == hold_state::lost);
    }
}

TEST_CASE("zk lock machine: a revocable hold reads its node's data: a request is news once, and our data goes back at its version") {
    listed l(config_of(one, std::nullopt, /*revocable=*/true), 3, {3});
    REQUIRE(find_action<lock_out::granted>(l.last));
    const auto* read = find_action<zk::get_data>(l.last);  // at once: a request may have come before the grant was heard
    REQUIRE(read);
    CHECK(read->path == "/l/" + node(3));
    CHECK(read->watch);
    const auto& asked = l.m.resume(node_reply(read->id, session, 4, revocation_signal));
    CHECK(find_action<lock_out::revocation_requested>(asked));
    const auto* back = find_action<zk::set_data>(asked);
    REQUIRE(back);
    CHECK(back->data == "me");
    CHECK(back->version == 4);
    SECTION("written again since: that write stays, and nobody is told") {
        CHECK(l.m.resume(reply_to(back->id, make_error_code(errc::bad_version))).empty());
    }
    SECTION("any other failure is told, as a write-back's") {
        const auto& note = only_notice(l.m.resume(reply_to(back->id, make_error_code(errc::connection_loss))));
        CHECK(note.what == lock_out::notice::write_back_failed);
        CHECK(note.path == "/l/" + node(3));
    }
}

TEST_CASE("zk lock machine: a create that gave up after it may have been applied asks nothing of the engine") {
    zk_lock_machine m(config_of(one));
    const auto create = find_action<zk::create>(m.resume(lock_in::start_after{true, session}))->id;
    // (the connection removes a protected create's node when it gives up)
    const auto& out = m.resume(reply_to(create, make_error_code(errc::connection_loss)));
    CHECK(ops_in(out) == 0);
    REQUIRE(find_action<lock_out::not_granted>(out));
    CHECK(find_action<lock_out::not_granted>(out)->ec == errc::connection_loss);
}

TEST_CASE("zk lock machine: a reply or an event of a ticket it never sent, or already heard, is dropped") {
    listed l(config_of(one), 5, {3, 5});
    CHECK(l.m.resume(reply_to(12345)).empty());
    CHECK(l.m.resume(zk::watch_fired{12345, watch_event_type::node_deleted}).empty());
    CHECK(l.m.resume(zk::timer_due{12345}).empty());
}

TEST_CASE("zk lock machine: connection changes reach the hold") {
    listed l(config_of(one), 3, {3});
    REQUIRE(find_action<lock_out::granted>(l.last));
    const auto* doubtful = find_action<lock_out::hold_changed>(l.m.resume(zk::connection_changed{connection_state::suspended, session}));
    REQUIRE(doubtful);
    CHECK(doubtful->state == hold_state::doubtful);
    const auto* lost = find_action<lock_out::hold_changed>(l.m.resume(zk::connection_changed{connection_state::connected, session + 1}));
    REQUIRE(lost);
    CHECK(lost->state == hold_state::lost);
    CHECK(lost->cause == lost_cause::session_ended);
}
