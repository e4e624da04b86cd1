// Scripted drivers for the lock machine, in the manner of Boost.MySQL's algo_test:
// - machine_script feeds one event at a time and expects the actions it must produce;
// - run_acquisition answers every request from a small model of one lock path (our node, the
//   nodes ahead of it, which leave once watched), holds, releases, and can fail any one of the
//   I/O steps with an error, then checks that the machine ended cleanly: one outcome for the
//   acquire, one for the release, no node of ours left, and nothing the machine still waits for.
#pragma once

#include "../../recipes/queue/lock_machine.hpp"
#include "../../recipes/queue/read_write_rule.hpp"

#include "zkr_catch.hpp"

#include <deque>
#include <set>
#include <sstream>

namespace zkr::test {

using namespace zkr::detail;

/// The read-write lock's two sides, for the tests of its rule and of the machine on it.
inline const read_write_rule reader{read_write_rule::side::read}, writer{read_write_rule::side::write};

template <typename A>
const A* find_action(const lock_actions& actions) {
    for (const auto& a : actions)
        if (const auto* p = std::get_if<A>(&a)) return p;
    return nullptr;
}

template <typename A>
std::size_t count_actions(const lock_actions& actions) {
    std::size_t n = 0;
    for (const auto& a : actions) n += std::holds_alternative<A>(a) ? 1 : 0;
    return n;
}

/// An untimed machine of `rule` whose node `ours` was created (czxid `token`) and listed among
/// `queue` on `session`; `last` holds the actions of that listing.
struct queued_machine {
    lock_machine m;
    lock_actions last;

    queued_machine(const lock_rule& rule, const std::string& ours, const std::vector<std::string>& queue,
                   std::int64_t token, std::int64_t session, zkr::decision_context context = {}, bool revocable = false)
        : m({&rule, std::nullopt, std::move(context), revocable}) {
        const auto a = m.resume(lock_in::start{true, session});
        const auto* create = find_action<lock_out::create>(a);
        const auto* list = find_action<lock_out::list>(a);
        REQUIRE(create);
        REQUIRE(list);  // the listing goes out with the create: one round trip
        REQUIRE(m.resume(lock_in::created{create->ticket, {}, "/l/" + ours, token, session}).size() == 1);
        last = m.resume(lock_in::listed{list->ticket, {}, queue});
    }
};

class machine_script {
public:
    explicit machine_script(lock_machine::config c) : m_(std::move(c)) {}

    machine_script& feed(const lock_event& e) {
        last_ = m_.resume(e);
        return *this;
    }
    /// The last event produced an action of type A: returns it.
    template <typename A>
    const A& expect() const {
        const auto* a = find_action<A>(last_);
        REQUIRE(a);
        return *a;
    }
    template <typename A>
    machine_script& expect_none() {
        CHECK_FALSE(find_action<A>(last_));
        return *this;
    }
    machine_script& expect_nothing() {
        CHECK(last_.empty());
        return *this;
    }
    lock_machine& machine() noexcept { return m_; }
    const lock_actions& last() const noexcept { return last_; }

private:
    lock_machine m_;
    lock_actions last_;
};

/// One lock path as run_acquisition models it: our node, and the nodes ahead of it in order.
/// Each node ahead leaves (is deleted) once its watch is set, so a waiter always gets its turn.
struct acquisition_model {
    std::string ours;                 ///< our node's name
    std::vector<std::string> ahead;   ///< nodes ahead of ours, in queue order
    std::int64_t session = 77;
    /// The acquire's timeout: timed by default (the deadline comes only as an interruption), zero
    /// for a try, nullopt for an untimed acquire.
    std::optional<std::chrono::milliseconds> timeout = std::chrono::milliseconds(1000);
};

struct acquisition_result {
    int io_steps = 0;  ///< requests the machine sent that expect a reply (create, list, reads, delete)
    int acquire_outcomes = 0, release_outcomes = 0;
    boost::system::error_code not_granted;  ///< the acquire's error, when it did not hold
    bool granted = false;
    bool finished = false;
    std::vector<std::string> left;  ///< our nodes made and never deleted nor asked to be removed (nor, when
                                    ///< the server refused the delete for good, reported to the caller)
    std::string trace;
};

/// Runs one acquisition to its end: granted, released. `fail_step` (0-based; -1: none) names the
/// I/O step whose reply carries `ec` instead of success or, with `interrupt`, the step before whose
/// reply that event comes (a deadline, a cancel, a connection change). A pending delete after a
/// retryable error is let through by one reconnection of the same session, as the real connection
/// would.
inline acquisition_result run_acquisition(const lock_rule& rule, const acquisition_model& model, int fail_step,
                                          boost::system::error_code ec, std::optional<lock_event> interrupt = std::nullopt) {
    lock_machine m({&rule, model.timeout});
    acquisition_result r;
    std::ostringstream trace;
    std::deque<lock_event> inbox{lock_in::start{true, model.session}};
    std::vector<std::string> queue = model.ahead;
    queue.push_back(model.ours);
    const std::string our_path = "/l/" + model.ours;
    bool created = false, gone = false, healed = false, refused_delete = false;
    // The reply of an I/O step: success, or the planted error at fail_step (or the interruption
    // first, then success).
    const auto failing = [&] {
        if (r.io_steps++ != fail_step) return false;
        if (!interrupt) return true;
        inbox.push_back(*interrupt);
        return false;
    };
    for (int guard = 0; guard < 1000; ++guard) {
        if (inbox.empty()) {
            // Nothing in flight: a release whose delete met the error waits for the connection.
            if (m.finished() || healed) break;
            healed = true;
            inbox.push_back(lock_in::connection{connection_state::reconnected, model.session});
            continue;
        }
        const auto event = inbox.front();
        inbox.pop_front();
        trace << "<- event " << event.index() << "\n";
        // A closed client, or a lost session, takes our ephemeral node with it.
        if (const auto* c = std::get_if<lock_in::connection>(&event);
            c && (c->state == connection_state::closed || c->state == connection_state::lost))
            gone = true;
        for (const auto& action : m.resume(event)) {
            trace << "-> action " << action.index() << "\n";
            std::visit(
                [&](const auto& a) {
                    using A = std::decay_t<decltype(a)>;
                    if constexpr (std::is_same_v<A, lock_out::create>) {
                        if (failing()) return inbox.push_back(lock_in::created{a.ticket, ec});
                        created = true;
                        inbox.push_back(lock_in::created{a.ticket, {}, our_path, 1000, model.session});
                    } else if constexpr (std::is_same_v<A, lock_out::list>) {
                        if (failing()) return inbox.push_back(lock_in::listed{a.ticket, ec, {}});
                        inbox.push_back(lock_in::listed{a.ticket, {}, created && !gone ? queue : model.ahead});
                    } else if constexpr (std::is_same_v<A, lock_out::watch_node>) {
                        if (failing()) return inbox.push_back(lock_in::node_read{a.ticket, ec});
                        inbox.push_back(lock_in::node_read{a.ticket, {}, 0});
                        // The node ahead leaves: its watch fires.
                        std::erase(queue, a.name);
                        inbox.push_back(lock_in::node_changed{a.ticket, watch_event_type::node_deleted});
                    } else if constexpr (std::is_same_v<A, lock_out::watch_own>) {
                        if (failing()) return inbox.push_back(lock_in::own_read{a.ticket, ec});
                        inbox.push_back(lock_in::own_read{a.ticket, {}, model.session, 0});
                    } else if constexpr (std::is_same_v<A, lock_out::own_watch_later>) {
                        inbox.push_back(lock_in::own_watch_due{a.ticket});
                    } else if constexpr (std::is_same_v<A, lock_out::delete_own>) {
                        if (failing()) {
                            // Not there (or gone with its session): as good as deleted. Any other
                            // final refusal (an ACL changed under us) leaves it until the session
                            // ends: the caller must hear that error (checked below).
                            if (ec == errc::no_node || ec == errc::session_expired) gone = true;
                            else if (!is_retryable(ec)) refused_delete = true;
                            return inbox.push_back(lock_in::deleted{a.ticket, ec});
                        }
                        gone = true;
                        inbox.push_back(lock_in::deleted{a.ticket, {}});
                    } else if constexpr (std::is_same_v<A, lock_out::remove_node>) {
                        if (a.path == our_path) gone = true;
                    } else if constexpr (std::is_same_v<A, lock_out::granted>) {
                        ++r.acquire_outcomes;
                        r.granted = true;
                        inbox.push_back(lock_in::release{});
                    } else if constexpr (std::is_same_v<A, lock_out::not_granted>) {
                        ++r.acquire_outcomes;
                        r.not_granted = a.ec;
                    } else if constexpr (std::is_same_v<A, lock_out::release_done>) {
                        ++r.release_outcomes;
                        if (refused_delete && a.ec == ec) gone = true;  // left, and the caller was told why
                    }
                },
                action);
        }
    }
    r.finished = m.finished();
    if (created && !gone) r.left.push_back(our_path);
    r.trace = trace.str();
    return r;
}

/// Checks that a run ended cleanly: one outcome for the acquire, one for a release of a grant,
/// nothing the machine still waits for, and no node of ours left behind.
inline void check_clean(const acquisition_result& r) {
    CHECK(r.acquire_outcomes == 1);
    CHECK(r.release_outcomes == (r.granted ? 1 : 0));
    CHECK(r.finished);
    CHECK(r.left.empty());
}

/// Fails each I/O step of the acquisition in turn, with each error, and checks that every run
/// ends cleanly. Returns how many I/O steps the happy path has.
inline int fail_each_step(const lock_rule& rule, const acquisition_model& model,
                          std::initializer_list<boost::system::error_code> errors) {
    const auto happy = run_acquisition(rule, model, -1, {});
    REQUIRE(happy.granted == (!model.timeout || model.timeout->count() > 0 || model.ahead.empty()));
    REQUIRE(happy.acquire_outcomes == 1);
    REQUIRE(happy.release_outcomes == (happy.granted ? 1 : 0));
    REQUIRE(happy.finished);
    REQUIRE(happy.left.empty());
    for (const auto& ec : errors) {
        for (int step = 0; step < happy.io_steps; ++step) {
            const auto r = run_acquisition(rule, model, step, ec);
            INFO("step " << step << " of " << happy.io_steps << " fails with " << ec.message() << "\n" << r.trace);
            check_clean(r);
        }
    }
    return happy.io_steps;
}

/// Delivers `interrupt` before each I/O step's reply in turn (the reply still comes), and checks
/// that every run ends cleanly. An acquire that the interruption ended hears why: `expect` (clear
/// for a deadline, which reads "not acquired in time").
inline void interrupt_each_step(const lock_rule& rule, const acquisition_model& model, const lock_event& interrupt,
                                std::optional<boost::system::error_code> expect) {
    const auto steps = run_acquisition(rule, model, -1, {}).io_steps;
    for (int step = 0; step < steps; ++step) {
        const auto r = run_acquisition(rule, model, step, {}, interrupt);
        INFO("an interruption (event " << interrupt.index() << ") before step " << step << " of " << steps << "\n" << r.trace);
        check_clean(r);
        if (!r.granted && expect) CHECK(r.not_granted == *expect);
    }
}

}  // namespace zkr::test
