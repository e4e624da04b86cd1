// zkr::double_barrier: a double_barrier_machine (double_barrier_machine.hpp) on a zk_engine, one
// machine per round of this member; this file holds only what the public class adds: the
// arguments checked, the waits and their timeouts, and the withdrawal of a member whose call timed
// out or whose object is destroyed.
#include <zkr/double_barrier.hpp>

#include "double_barrier_machine.hpp"
#include "../core/timed_waits.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/protect_prefix.hpp"  // a UUID's 36 characters, as Curator names its members

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <future>
#include <mutex>

namespace zkr {

using boost::system::error_code;
namespace db_out = detail::double_barrier_out;

struct double_barrier::state : std::enable_shared_from_this<state> {
    using engine = detail::zk_engine<detail::double_barrier_machine, state>;
    enum class where { out, entering, entered, leaving, withdrawing };

    // The enter or leave under way: its completion, taken once (by the machine's answer, the
    // timeout, or the object's end).
    struct call {
        std::uint64_t id = 0;
        bool entering = true;
        bool queued = false;  // behind a withdrawal still under way: started once it ends
        call_done done;
    };

    client& c;
    const std::string path, id;
    const std::size_t members;
    const boost::asio::any_io_executor callbacks;
    // The current async call's timeout, if it has one: its wait calls time_out(id); a call that
    // ends otherwise takes it (take_current), which cancels its timer.
    const std::shared_ptr<detail::timed_waits> timeouts;
    std::mutex mutex;
    std::condition_variable changed;  // at == out, for the destructor
    where at = where::out;            // under mutex
    std::optional<call> current;      // under mutex
    std::uint64_t last_call = 0;      // under mutex
    std::shared_ptr<engine> running;  // this round's machine, under mutex

    state(client& cl, std::string p, std::string i, std::size_t n)
        : c(cl), path(std::move(p)), id(std::move(i)), members(n), callbacks(detail::callback_executor(detail::connection_of(cl))),
          timeouts(std::make_shared<detail::timed_waits>(callbacks)) {}

    // Starts a call (any thread): its id, or why it is refused (when this member is not where the
    // call needs it; nothing is sent, and done is left with the caller, not moved from).
    struct started {
        std::uint64_t id = 0;
        std::string refused;
    };
    started start(bool entering, std::optional<std::chrono::milliseconds> timeout, call_done&& done) {
        std::optional<call> closed;
        started out;
        {
            std::lock_guard lock(mutex);
            if (current) return {0, "an enter or leave of this member is under way"};
            const bool queued = at == where::withdrawing;
            if (!queued && at != (entering ? where::out : where::entered)) return {0, wrong_place(entering)};
            out.id = ++last_call;
            current = call{out.id, entering, queued, std::move(done)};
            if (timeout)
                timeouts->add(*timeout, [weak = weak_from_this(), id = out.id](const error_code&, bool) {
                    if (auto s = weak.lock()) s->time_out(id);
                });
            if (!queued && launch()) closed = take_current();
        }
        if (closed) closed->done(make_error_code(errc::closed), false);
        return out;
    }

    // Under mutex: why a call finds this member in the wrong place.
    std::string wrong_place(bool entering) const {
        if (entering) return at == where::entered ? "this member has entered already (leave first)" : "an enter or leave of this member is under way";
        return at == where::out ? "this member has not entered" : "an enter or leave of this member is under way";
    }

    // Under mutex: the current call begins its round; closed once the client's close has begun
    // (the machine would never hear of it).
    error_code launch() {
        if (current->entering) {
            std::weak_ptr<state> weak = shared_from_this();
            running = std::make_shared<engine>(c, detail::double_barrier_machine(path, id, members), weak);
            at = where::entering;
            if (running->start(detail::double_barrier_in::enter{})) return {};
        } else {
            at = where::leaving;
            if (running->post(detail::double_barrier_in::leave{})) return {};
        }
        at = where::out;
        running.reset();
        return make_error_code(errc::closed);
    }

    // Under mutex: the call ends, and its timeout with it (its timer cancelled: a pending timer
    // would hold the client's destruction until it ran out).
    call take_current() {
        (void)timeouts->take_all();
        call k = std::move(*current);
        current.reset();
        return k;
    }

    // Under mutex: this member gives its round up (its node is deleted in the background).
    void withdraw() {
        at = where::withdrawing;
        running->post(detail::double_barrier_in::give_up{});
    }

    // The call `call_id` ran out of time (if it is still under way): it answers false, and this
    // member withdraws (its node is deleted in the background).
    void time_out(std::uint64_t call_id) {
        std::optional<call> k;
        {
            std::lock_guard lock(mutex);
            if (!current || current->id != call_id) return;
            k = take_current();
            if (!k->queued) withdraw();
        }
        k->done({}, false);
    }

    // Network thread: the machine's outcome.
    void on_outcome(const detail::double_barrier_machine::action& a) {
        std::shared_ptr<engine> done;
        std::optional<call> answered;
        error_code ec;
        bool passed = false;
        {
            std::lock_guard lock(mutex);
            if (std::holds_alternative<db_out::entered>(a)) {
                if (at == where::withdrawing) {
                    // Its caller was told "timed out" already: the member withdraws after all.
                    withdraw();
                    return;
                }
                at = where::entered;
                passed = true;
            } else {
                if (const auto* f = std::get_if<db_out::failed>(&a)) ec = f->ec;
                else passed = std::holds_alternative<db_out::left>(a);
                at = where::out;
                done = std::move(running);
            }
            if (current && !current->queued) {
                answered = take_current();
            } else if (current && at == where::out) {
                // A call that waited for the withdrawal begins now, or finds it left nothing to leave.
                current->queued = false;
                if (!current->entering) {
                    ec = make_error_code(errc::invalid_argument);
                    answered = take_current();
                } else if ((ec = launch())) {
                    answered = take_current();
                }
            }
        }
        changed.notify_all();
        if (done) done->stop();
        if (answered) answered->done(ec, passed);
    }

    // The object's end: a call under way ends with closed, and a member that entered withdraws
    // (waiting at most 10 s for its node's delete).
    void end(const std::string& member) {
        std::optional<call> k;
        std::unique_lock lock(mutex);
        if (current) k = take_current();
        if (at != where::out && at != where::withdrawing) withdraw();
        if (k) {
            lock.unlock();
            k->done(make_error_code(errc::closed), false);
            lock.lock();
        }
        if (at == where::out) return;
        changed.wait_for(lock, std::chrono::seconds(10), [&] { return at == where::out; });
        if (running) {
            c.logger()->warn("double barrier {}: member {} not withdrawn within 10 s; its node goes with its session", path, member);
            running->stop();
        }
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
        state_->end(id_);
    } catch (...) {  // (a mutex's or the logger's system_error is the only conceivable one)
    }
}

void double_barrier::enter() { (void)run(true, std::nullopt); }

bool double_barrier::enter(std::chrono::milliseconds timeout) { return run(true, timeout); }

void double_barrier::leave() { (void)run(false, std::nullopt); }

bool double_barrier::leave(std::chrono::milliseconds timeout) { return run(false, timeout); }

boost::asio::any_io_executor double_barrier::callback_executor() const { return state_->callbacks; }

void double_barrier::start_call(bool entering, std::chrono::milliseconds timeout, call_done done) {
    if (timeout.count() < 0) return done(make_error_code(errc::invalid_argument), false);
    const auto started = state_->start(entering, timeout, std::move(done));
    if (!started.refused.empty()) {  // (then done was not moved from)
        client_.logger()->debug("double barrier {}: {} refused: {}", path_, entering ? "enter" : "leave", started.refused);
        done(make_error_code(errc::invalid_argument), false);
    }
}

bool double_barrier::run(bool entering, std::optional<std::chrono::milliseconds> timeout) {
    const char* what = entering ? "enter" : "leave";
    if (timeout && timeout->count() < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         std::string("double barrier ") + what + " timeout " + std::to_string(timeout->count()) + " ms is negative");
    // The sync form times itself (a timer would run on the callback thread, which may be the
    // caller's): the call has no timer of its own.
    auto result = std::make_shared<std::promise<std::pair<error_code, bool>>>();
    auto answer = result->get_future();
    const auto started = state_->start(entering, std::nullopt, [result](const error_code& ec, bool passed) { result->set_value({ec, passed}); });
    if (!started.refused.empty())
        throw zkr::error(make_error_code(errc::invalid_argument), path_, std::string("double barrier ") + what + ": " + started.refused);
    if (timeout && answer.wait_for(*timeout) == std::future_status::timeout) state_->time_out(started.id);  // (unless the answer came first: then it stands)
    const auto [ec, passed] = answer.get();
    if (ec == errc::session_expired)
        detail::throw_if(ec, path_, "the session expired while entering the double barrier " + printable_path(path_) +
                                        ": the others may have gone through without this member; enter again for a new round");
    if (ec == errc::closed) detail::throw_if(ec, path_, std::string("the client was closed while waiting to ") + what + " the double barrier " + printable_path(path_));
    if (ec == errc::invalid_argument && !entering)
        detail::throw_if(ec, path_, "double barrier leave: this member withdrew (an earlier call timed out) and has not entered");
    detail::throw_if(ec, path_, ec.message() + " while waiting to " + what + " the double barrier " + printable_path(path_));
    return passed;
}

}  // namespace zkr
