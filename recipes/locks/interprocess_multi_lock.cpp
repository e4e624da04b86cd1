// The multi-lock: member lock cores acquired one at a time in path order (the global order that
// rules out a deadlock between overlapping sets), released together.
#include <zkr/interprocess_multi_lock.hpp>

#include "../queue/lock_core.hpp"
#include "multi_lock_order.hpp"
#include "../core/step_deadline.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>

#include <algorithm>
#include <condition_variable>
#include <list>

namespace zkr {

using boost::system::error_code;

multi_lock_member::multi_lock_member(interprocess_mutex& m) : core_(m.core_.get()) {}
multi_lock_member::multi_lock_member(fair_lock& f) : core_(f.core_.get()) {}

// One thread's hold of every member; its stop is requested when any member's hold ends.
struct interprocess_multi_lock::term {
    explicit term(std::thread::id o) : owner(o) {}
    const std::thread::id owner;  // its members' direct acquires by this thread are refused
    std::vector<std::pair<detail::lock_core*, std::shared_ptr<detail::hold>>> members;
    std::stop_source stop;
    std::list<std::stop_callback<std::function<void()>>> on_member_stop;

    void add(detail::lock_core* core, std::shared_ptr<detail::hold> h) {
        on_member_stop.emplace_back(h->stop_token(), [s = stop]() mutable { s.request_stop(); });
        core->note_multi_hold(owner, true);
        members.emplace_back(core, std::move(h));
    }

    // Releases every member at once (each delete in flight together) and waits for them all: the
    // first failure, in acquire order. Never throws.
    error_code release_all() noexcept {
        struct waiting {
            std::mutex m;
            std::condition_variable cv;
            std::size_t left;
            std::vector<error_code> outcomes;
        };
        auto w = std::make_shared<waiting>();
        w->left = members.size();
        w->outcomes.resize(members.size());
        for (std::size_t i = 0; i < members.size(); ++i) {
            auto& [core, h] = members[i];
            try {
                core->note_multi_hold(owner, false);
            } catch (...) {  // (a vector's erase does not throw; the lock's mutex could)
            }
            try {
                core->driver().release(h, [w, i](const error_code& ec) {
                    std::lock_guard lock(w->m);
                    w->outcomes[i] = ec;
                    if (--w->left == 0) w->cv.notify_all();
                });
            } catch (const std::exception&) {  // out of memory: the node stays with the session
                std::lock_guard lock(w->m);
                w->outcomes[i] = make_error_code(errc::system_error);
                --w->left;
            }
        }
        std::unique_lock lock(w->m);
        w->cv.wait(lock, [&] { return w->left == 0; });
        stop.request_stop();
        for (const auto& ec : w->outcomes)
            if (ec) return ec;
        return {};
    }

    void release_quietly() noexcept {
        const auto ec = release_all();
        if (ec && !members.empty())
            detail::log_quiet_release(members.front().first->driver().get_client(), members.front().first->path(), ec);
    }

    hold_state state() const noexcept {
        // Worst first: one member lost ends the whole hold; one doubtful makes it doubtful.
        hold_state worst = hold_state::held;
        for (const auto& [core, h] : members) {
            const auto s = h->caller_state();
            if (s == hold_state::lost) return s;
            if (s != hold_state::held && worst == hold_state::held) worst = s;
        }
        return worst;
    }
};

interprocess_multi_lock::interprocess_multi_lock(client& c, std::vector<std::string> paths) {
    owned_.reserve(paths.size());
    for (auto& p : paths) {
        owned_.push_back(std::make_unique<interprocess_mutex>(c, std::move(p)));
        members_.push_back(multi_lock_member(*owned_.back()).core_);
    }
    order_members();
}

interprocess_multi_lock::interprocess_multi_lock(std::vector<multi_lock_member> members) {
    for (const auto& m : members) members_.push_back(m.core_);
    order_members();
}

void interprocess_multi_lock::order_members() {
    auto misuse = [](const std::string& path, const std::string& what) {
        throw zkr::error(make_error_code(errc::invalid_argument), path, "interprocess_multi_lock: " + what);
    };
    if (members_.empty()) misuse("", "no locks to hold (an empty list)");
    // Held through the multi-lock, the second would queue behind the first: a deadlock with itself.
    if (const auto twice = detail::order_by_path(members_, [](const detail::lock_core* m) -> const std::string& { return m->path(); }))
        misuse(*twice, "the lock path " + *twice + " is listed twice");
}

interprocess_multi_lock::~interprocess_multi_lock() {
    std::vector<std::shared_ptr<term>> holds;
    {
        std::lock_guard lock(mutex_);
        holds = holds_.take_all();
    }
    for (const auto& t : holds) t->release_quietly();
}

void interprocess_multi_lock::acquire() { acquire_for(std::nullopt); }

bool interprocess_multi_lock::acquire(std::chrono::milliseconds timeout) { return acquire_for(detail::checked_timeout(timeout)); }

bool interprocess_multi_lock::acquire_for(std::optional<std::chrono::milliseconds> timeout) {
    const auto owner = std::this_thread::get_id();
    {
        std::lock_guard lock(mutex_);
        if (holds_.reenter(owner)) return true;
    }
    const detail::step_deadline deadline(timeout);  // one for all members
    auto t = std::make_shared<term>(owner);
    try {
        for (auto* core : members_) {
            auto h = core->acquire_hold(deadline.left());
            if (!h) {
                t->release_quietly();
                return false;
            }
            t->add(core, std::move(h));
        }
    } catch (...) {
        t->release_quietly();
        throw;
    }
    std::lock_guard lock(mutex_);
    holds_.adopt(owner, std::move(t));
    return true;
}

std::shared_ptr<interprocess_multi_lock::term> interprocess_multi_lock::take_for_release(error_code& ec) {
    std::lock_guard lock(mutex_);
    return holds_.take_level(std::this_thread::get_id(), ec);
}

void interprocess_multi_lock::release(error_code& ec) {
    if (auto t = take_for_release(ec)) ec = t->release_all();
}

void interprocess_multi_lock::release() {
    error_code ec;
    release(ec);
    detail::throw_release_error(ec, members_.front()->path(), "release by a thread that does not hold the multi-lock", "the multi-lock");
}

void interprocess_multi_lock::unlock() noexcept {
    error_code ec;
    std::shared_ptr<term> t;
    try {
        t = take_for_release(ec);
    } catch (const std::exception&) {
        ec = make_error_code(errc::system_error);
    }
    if (t) return t->release_quietly();
    if (ec) detail::log_quiet_release(members_.front()->driver().get_client(), members_.front()->path(), ec);
}

std::shared_ptr<interprocess_multi_lock::term> interprocess_multi_lock::current() const {
    std::lock_guard lock(mutex_);
    return holds_.of(std::this_thread::get_id());
}

bool interprocess_multi_lock::is_held() const { return current() != nullptr; }

hold_state interprocess_multi_lock::state() const {
    auto t = current();
    return t ? t->state() : hold_state::released;
}

std::stop_token interprocess_multi_lock::stop_token() const {
    auto t = current();
    return t ? t->stop.get_token() : detail::stopped_token();
}

std::shared_ptr<interprocess_multi_lock::term> interprocess_multi_lock::current_or_throw() const {
    auto t = current();
    if (!t) detail::throw_if(make_error_code(errc::lock_not_held), members_.front()->path(), "this thread holds no multi-lock");
    return t;
}

std::vector<std::int64_t> interprocess_multi_lock::fencing_tokens() const {
    const auto t = current_or_throw();
    std::vector<std::int64_t> tokens;
    for (const auto& [core, h] : t->members) tokens.push_back(h->fencing_token());
    return tokens;
}

std::vector<std::string> interprocess_multi_lock::node_paths() const {
    const auto t = current_or_throw();
    std::vector<std::string> nodes;
    for (const auto& [core, h] : t->members) nodes.push_back(h->node_path());
    return nodes;
}

std::vector<multi_result> interprocess_multi_lock::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    auto t = current();
    if (!t) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    std::vector<const detail::hold*> holds;
    for (const auto& [core, h] : t->members) holds.push_back(h.get());
    return detail::hold::guarded_multi(holds, std::move(ops), ec);
}

std::vector<multi_result> interprocess_multi_lock::guarded_multi(std::vector<multi_op> ops) {
    error_code ec;
    auto r = guarded_multi(std::move(ops), ec);
    if (ec == errc::invalid_argument)
        detail::throw_if(ec, members_.front()->path(), "interprocess_multi_lock: the members are on more than one client, so no "
                                                       "one transaction can check them all");
    detail::throw_if(ec, members_.front()->path(), ec.message() + " in a guarded write");
    return r;
}

std::vector<std::string> interprocess_multi_lock::paths() const {
    std::vector<std::string> p;
    for (const auto* core : members_) p.push_back(core->path());
    return p;
}

}  // namespace zkr
