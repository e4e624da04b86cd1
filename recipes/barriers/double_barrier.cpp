// zkr::double_barrier: a double_barrier_machine (double_barrier_machine.hpp) on a zk_engine, one
// machine per round of this member; this file holds only what the public class adds: the
// arguments checked, the waits and their timeouts, and the withdrawal of a member whose call timed
// out or whose object is destroyed.
#include <zkr/double_barrier.hpp>

#include "double_barrier_machine.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/protect_prefix.hpp"  // a UUID's 36 characters, as Curator names its members

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>

namespace zkr {

using boost::system::error_code;
namespace db_out = detail::double_barrier_out;

struct double_barrier::state {
    using engine = detail::zk_engine<detail::double_barrier_machine>;
    enum class where { out, entering, entered, leaving, withdrawing };

    client& c;
    const std::string path, id;
    const std::size_t members;
    std::mutex mutex;
    std::condition_variable changed;
    where at = where::out;                       // under mutex
    std::optional<std::pair<error_code, bool>> answer;  // the call under way's, under mutex
    std::shared_ptr<engine> running;             // this round's machine, under mutex

    state(client& cl, std::string p, std::string i, std::size_t n) : c(cl), path(std::move(p)), id(std::move(i)), members(n) {}

    // Network thread: the machine's outcome.
    void on_outcome(const detail::double_barrier_machine::action& a) {
        std::shared_ptr<engine> done;
        {
            std::lock_guard lock(mutex);
            if (std::holds_alternative<db_out::entered>(a)) {
                if (at == where::withdrawing) {
                    // Its caller was told "timed out" already: the member withdraws after all.
                    running->post(detail::double_barrier_in::give_up{});
                    return;
                }
                at = where::entered;
                answer.emplace(error_code{}, true);
            } else {
                if (const auto* f = std::get_if<db_out::failed>(&a)) answer.emplace(f->ec, false);
                else answer.emplace(error_code{}, std::holds_alternative<db_out::left>(a));
                at = where::out;
                done = std::move(running);
            }
        }
        changed.notify_all();
        if (done) done->stop();
    }
};

double_barrier::double_barrier(client& c, std::string path, std::size_t member_count)
    : client_(c), path_(std::move(path)), id_(detail::random_uuid()) {
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid double barrier path \"" + printable_path(path_) + "\": " + *e);
    if (path_ == "/") throw zkr::error(make_error_code(errc::invalid_path), path_, "the root \"/\" cannot be a double barrier");
    if (member_count == 0) throw zkr::error(make_error_code(errc::invalid_argument), path_, "a double barrier needs a member_count of at least 1");
    state_ = std::make_shared<state>(c, path_, id_, member_count);
}

double_barrier::~double_barrier() {
    try {
        std::unique_lock lock(state_->mutex);
        if (state_->at == state::where::out) return;
        if (state_->at != state::where::withdrawing) {
            state_->at = state::where::withdrawing;
            state_->running->post(detail::double_barrier_in::give_up{});
        }
        state_->changed.wait_for(lock, std::chrono::seconds(10), [&] { return state_->at == state::where::out; });
        if (state_->running) {
            client_.logger()->warn("double barrier {}: member {} not withdrawn within 10 s; its node goes with its session", path_, id_);
            state_->running->stop();
        }
    } catch (...) {  // (a mutex's or the logger's system_error is the only conceivable one)
    }
}

void double_barrier::enter() { (void)run(true, std::nullopt); }

bool double_barrier::enter(std::chrono::milliseconds timeout) { return run(true, timeout); }

void double_barrier::leave() { (void)run(false, std::nullopt); }

bool double_barrier::leave(std::chrono::milliseconds timeout) { return run(false, timeout); }

bool double_barrier::run(bool entering, std::optional<std::chrono::milliseconds> timeout) {
    const char* what = entering ? "enter" : "leave";
    if (timeout && timeout->count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         std::string("double barrier ") + what + " timeout " + std::to_string(timeout->count()) + " ms is negative");
    const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
    auto& s = *state_;
    std::unique_lock lock(s.mutex);
    // A member still withdrawing from an earlier call is waited for (within this call's time).
    const auto settled = [&] { return s.at != state::where::withdrawing; };
    if (!timeout) s.changed.wait(lock, settled);
    else if (!s.changed.wait_until(lock, deadline, settled)) return false;
    const auto wanted = entering ? state::where::out : state::where::entered;
    if (s.at != wanted) {
        const std::string why = entering ? (s.at == state::where::entered ? "this member has entered already (leave first)" : "an enter or leave of this member is under way")
                                         : (s.at == state::where::out ? "this member has not entered" : "an enter or leave of this member is under way");
        throw zkr::error(make_error_code(errc::invalid_argument), path_, std::string("double barrier ") + what + ": " + why);
    }
    s.answer.reset();
    if (entering) {
        std::weak_ptr<state> weak = state_;
        s.running = std::make_shared<state::engine>(client_, detail::double_barrier_machine(path_, id_, s.members),
                                                    [weak](const detail::double_barrier_machine::action& a) {
                                                        if (auto st = weak.lock()) st->on_outcome(a);
                                                    });
        s.at = state::where::entering;
        // Refused once the client's close has begun (the machine would never hear of it).
        if (!s.running->start(detail::double_barrier_in::enter{})) {
            s.at = state::where::out;
            s.running.reset();
            detail::throw_if(make_error_code(errc::closed), path_, "the client is closed: cannot enter the double barrier " + printable_path(path_));
        }
    } else {
        s.at = state::where::leaving;
        if (!s.running->post(detail::double_barrier_in::leave{})) {
            s.at = state::where::out;
            s.running.reset();
            detail::throw_if(make_error_code(errc::closed), path_, "the client is closed: cannot leave the double barrier " + printable_path(path_));
        }
    }
    const auto answered = [&] { return s.answer.has_value(); };
    if (timeout && !s.changed.wait_until(lock, deadline, answered)) {
        // Timed out: this member withdraws (its node is deleted in the background).
        s.at = state::where::withdrawing;
        s.running->post(detail::double_barrier_in::give_up{});
        return false;
    }
    if (!timeout) s.changed.wait(lock, answered);
    const auto [ec, passed] = *s.answer;
    if (ec == errc::session_expired)
        detail::throw_if(ec, path_, "the session expired while entering the double barrier " + printable_path(path_) +
                                        ": the others may have gone through without this member; enter again for a new round");
    if (ec == errc::closed) detail::throw_if(ec, path_, std::string("the client was closed while waiting to ") + what + " the double barrier " + printable_path(path_));
    detail::throw_if(ec, path_, ec.message() + " while waiting to " + what + " the double barrier " + printable_path(path_));
    return passed;
}

}  // namespace zkr
