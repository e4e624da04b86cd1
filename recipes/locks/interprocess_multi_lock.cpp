// The multi-lock: member lock cores acquired one at a time in path order (the global order that
// rules out a deadlock between overlapping sets), released together.
#include <zkr/interprocess_multi_lock.hpp>

#include "../queue/lock_core.hpp"
#include "multi_hold.hpp"
#include "multi_lock_order.hpp"
#include "../core/step_deadline.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>

#include <algorithm>

namespace zkr {

using boost::system::error_code;

multi_lock_member::multi_lock_member(interprocess_mutex& m) : core_(m.core_.get()) {}
multi_lock_member::multi_lock_member(fair_lock& f) : core_(f.core_.get()) {}

// One thread's hold of every member: the members' holds, and the thread whose direct acquires of
// those members are refused meanwhile.
struct interprocess_multi_lock::term {
    explicit term(std::thread::id o) : owner(o) {}
    const std::thread::id owner;
    std::vector<detail::lock_core*> cores;
    detail::multi_hold held;

    void add(detail::lock_core* core, std::shared_ptr<detail::hold> h) {
        held.add(core->shared_driver(), std::move(h));
        core->note_multi_hold(owner, true);
        cores.push_back(core);
    }

    // Releases every member at once and waits for them all: the first failure, in acquire order.
    // Never throws.
    error_code release_all() noexcept {
        for (auto* core : cores) {
            try {
                core->note_multi_hold(owner, false);
            } catch (...) {  // (a vector's erase does not throw; the lock's mutex could)
            }
        }
        return held.release_and_wait();
    }

    void release_quietly() noexcept {
        const auto ec = release_all();
        if (ec && !cores.empty()) detail::log_quiet_release(cores.front()->driver().get_client(), cores.front()->path(), ec);
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
    return t ? t->held.state() : hold_state::released;
}

std::stop_token interprocess_multi_lock::stop_token() const {
    auto t = current();
    return t ? t->held.stop_token() : detail::stopped_token();
}

std::shared_ptr<interprocess_multi_lock::term> interprocess_multi_lock::current_or_throw() const {
    auto t = current();
    if (!t) detail::throw_if(make_error_code(errc::lock_not_held), members_.front()->path(), "this thread holds no multi-lock");
    return t;
}

std::vector<std::int64_t> interprocess_multi_lock::fencing_tokens() const { return current_or_throw()->held.fencing_tokens(); }

std::vector<std::string> interprocess_multi_lock::node_paths() const { return current_or_throw()->held.node_paths(); }

std::vector<multi_result> interprocess_multi_lock::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    auto t = current();
    if (!t) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    return t->held.guarded_multi(std::move(ops), ec);
}

std::vector<multi_result> interprocess_multi_lock::guarded_multi(std::vector<multi_op> ops) {
    error_code ec;
    auto r = guarded_multi(std::move(ops), ec);
    detail::throw_guarded_multi_error(ec, members_.front()->path(), "interprocess_multi_lock");
    return r;
}

namespace detail {

// One async acquire of every member, a step per member on the network thread: each step gets what
// is left of the deadline, and ends with `cancelled` if its lock object was destroyed since the
// acquire was called (its driver's cancel(); the driver itself lives on with this acquire).
struct multi_acquire : std::enable_shared_from_this<multi_acquire> {
    struct member {
        acquire_start start;
        std::uint64_t begun_at_cancellation = 0;
    };
    std::vector<member> members;
    std::optional<std::chrono::milliseconds> timeout;
    boost::asio::any_io_executor callbacks;
    std::optional<step_deadline> deadline;
    std::size_t next = 0;
    std::shared_ptr<multi_hold> held = std::make_shared<multi_hold>();
    unique_function<void(const error_code&, multi_lock_hold)> done;

    void step() {
        if (next == members.size()) return done({}, multi_lock_hold(std::move(held)));
        auto& m = members[next++];
        acquire_request req;
        req.timeout = deadline->left();
        req.data = m.start.data;
        req.node_name = m.start.node_name;
        req.begun_at_cancellation = m.begun_at_cancellation;
        m.start.driver->acquire(std::move(req), [self = shared_from_this(), &m](const error_code& ec, std::shared_ptr<hold> h) {
            const bool granted = !ec && h;
            if (h) {
                m.start.attach(h);
                self->held->add(m.start.driver, std::move(h));
            }
            if (!granted) {
                // On the network thread: nothing here may wait for a reply.
                self->held->release_in_background();  // the members taken so far
                return self->done(ec, multi_lock_hold());
            }
            self->step();
        });
    }
};

std::shared_ptr<multi_acquire> prepare_multi_acquire(const std::vector<lock_core*>& members, std::optional<std::chrono::milliseconds> timeout) {
    auto a = std::make_shared<multi_acquire>();
    for (const auto* core : members) a->members.push_back({prepare_acquire(*core, std::nullopt), core->driver().cancellations()});
    a->timeout = timeout;
    a->callbacks = a->members.front().start.callbacks;
    return a;
}

boost::asio::any_io_executor callbacks_of(const multi_acquire& a) { return a.callbacks; }

void start_multi_acquire(std::shared_ptr<multi_acquire> a, unique_function<void(const error_code&, multi_lock_hold)> done) {
    a->deadline.emplace(a->timeout);
    a->done = std::move(done);
    a->step();
}

}  // namespace detail

std::vector<std::string> interprocess_multi_lock::paths() const {
    std::vector<std::string> p;
    for (const auto* core : members_) p.push_back(core->path());
    return p;
}

}  // namespace zkr
