// zkr::persistent_node: a persistent_node_machine (persistent_node_machine.hpp) on a zk_engine; this
// file holds only what the public class adds: the arguments checked, the waits, the path's listeners.
#include <zkr/persistent_node.hpp>

#include "persistent_node_machine.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/listener_registry.hpp"

#include <zkr/detail/request.hpp>
#include <zkr/error.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>

namespace zkr {

using boost::system::error_code;
namespace node_out = detail::node_out;

// What the engine's outcomes share with the object; the engine holds it weakly.
struct persistent_node::state {
    client& c;
    std::string path;
    create_mode mode;
    mutable std::mutex mutex;
    std::condition_variable changed;
    std::string current, data;  // under mutex
    bool started = false, first_created = false, closing = false, closed = false;
    bool gone = false;  // once closed: the node is known gone (the delete did not fail)
    error_code failure;  // why the machine gave up
    detail::listener_registry<std::function<void(const std::string&)>> listeners;
    std::shared_ptr<detail::zk_engine<detail::persistent_node_machine, state>> engine;

    state(client& cl, std::string p, create_mode m, std::string d) : c(cl), path(std::move(p)), mode(m), data(std::move(d)) {}

    // Network thread.
    void on_outcome(const detail::persistent_node_machine::action& a) {
        if (const auto* p = std::get_if<node_out::path_changed>(&a)) {
            {
                std::lock_guard lock(mutex);
                current = p->path;
            }
            c.logger()->debug("persistent node {}: {}", path, p->path.empty() ? "gone" : "made as " + p->path);
            auto targets = listeners.snapshot();
            if (!targets.empty())
                boost::asio::post(detail::callback_executor(detail::connection_of(c)), [targets = std::move(targets), now = p->path] {
                    for (const auto& fn : targets) fn(now);
                });
        } else if (const auto* t = std::get_if<node_out::taken>(&a)) {
            if (t->earlier_session)
                c.logger()->warn("persistent node {}: {} is this client's earlier session's (0x{:x}), which the server still keeps; "
                                 "waiting for the server to end it", path, t->path, t->owner);
            else
                c.logger()->warn("persistent node {}: {} is another session's (0x{:x}); waiting for it to go", path, t->path, t->owner);
        } else if (std::holds_alternative<node_out::first_created>(a)) {
            settle([this] { first_created = true; });
        } else if (const auto* g = std::get_if<node_out::gave_up>(&a)) {
            c.logger()->error("persistent node {}: cannot be made ({}); not trying again", path, g->ec.message());
            settle([this, ec = g->ec] { failure = ec; });
        } else if (const auto* d = std::get_if<node_out::closed>(&a)) {
            if (d->ec) c.logger()->warn("persistent node {}: the delete at close failed ({}); the node stays", path, d->ec.message());
            settle([this, gone_now = !d->ec] {
                closed = true;
                gone = gone_now;
            });
            engine->stop();
        }
    }

    template <typename Change>
    void settle(Change change) {
        {
            std::lock_guard lock(mutex);
            change();
        }
        changed.notify_all();
    }
};

namespace {

// The error a failed create gives the user: what was wrong, and for a TTL, what the server needs.
zkr::error creation_error(const error_code& ec, const std::string& path, create_mode mode) {
    if (ec == errc::unimplemented && has_ttl(mode))
        return zkr::error(ec, path, "the server does not allow TTL nodes: start it with zookeeper.extendedTypesEnabled=true");
    if (ec == errc::no_node) return zkr::error(ec, path, "a parent of " + path + " does not exist (create_parents is off)");
    return zkr::error(ec, path, ec.message() + " while creating the persistent node " + path);
}

}  // namespace

persistent_node::persistent_node(client& c, std::string path, create_mode mode, std::string data, persistent_node_options options)
    : client_(c), path_(std::move(path)) {
    // The create the machine will send, checked as the client checks it: nothing is sent if it is wrong.
    detail::request probe;
    probe.kind = detail::op_kind::create;
    probe.path = path_;
    probe.data = data;
    probe.create = {.mode = mode, .create_parents = options.create_parents, .protect = options.use_protection, .ttl = options.ttl};
    if (auto f = detail::check_request(probe)) throw zkr::error(f.ec, path_, "persistent node: " + f.message);
    if (mode == create_mode::container) throw zkr::error(make_error_code(errc::invalid_argument), path_, "a persistent node cannot be a container (the server removes an empty one)");
    state_ = std::make_shared<state>(c, path_, mode, data);
    detail::persistent_node_config config{.path = path_, .mode = mode, .protect = options.use_protection, .create_parents = options.create_parents, .ttl = options.ttl};
    std::weak_ptr<state> weak = state_;
    state_->engine = std::make_shared<detail::zk_engine<detail::persistent_node_machine, state>>(
        client_, detail::persistent_node_machine(std::move(config), std::move(data)), weak);
}

persistent_node::~persistent_node() {
    try {
        close();
    } catch (...) {  // (close does not throw; a lock's system_error is the only conceivable one)
    }
    state_->engine->stop();
}

void persistent_node::start() {
    {
        std::lock_guard lock(state_->mutex);
        if (state_->started || state_->closing) return;
        state_->started = true;
    }
    state_->engine->start(detail::node_in::start{client_.session_id()});
}

bool persistent_node::close(std::chrono::milliseconds timeout) {
    {
        std::unique_lock lock(state_->mutex);
        if (!state_->closing) {
            state_->closing = true;
            if (!state_->started) return state_->closed = state_->gone = true;
            // A closed client runs nothing more: an ephemeral node went with its session, a
            // persistent one stays.
            if (client_.state() == connection_state::closed) {
                state_->closed = true;
                return state_->gone = is_ephemeral(state_->mode);
            }
            lock.unlock();
            state_->engine->post(detail::node_in::close{});
            lock.lock();
        }
        if (state_->changed.wait_for(lock, timeout, [&] { return state_->closed; })) return state_->gone;
    }
    client_.logger()->warn("persistent node {}: not deleted within {} ms; trying on the next reconnection", path_, timeout.count());
    return false;
}

bool persistent_node::wait_for_initial_create(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mutex);
    state_->changed.wait_for(lock, timeout, [&] { return state_->first_created || state_->failure || state_->closed; });
    if (state_->failure) throw creation_error(state_->failure, path_, state_->mode);
    return state_->first_created;
}

std::string persistent_node::current_path() const {
    std::lock_guard lock(state_->mutex);
    return state_->current;
}

void persistent_node::set_data(std::string data) {
    if (auto f = detail::check_request([&] {
            detail::request r;
            r.kind = detail::op_kind::set_data;
            r.path = path_;
            r.data = data;
            return r;
        }()))
        throw zkr::error(f.ec, path_, "persistent node: " + f.message);
    {
        std::lock_guard lock(state_->mutex);
        state_->data = data;
    }
    state_->engine->post(detail::node_in::set_data{std::move(data)});
}

std::string persistent_node::data() const {
    std::lock_guard lock(state_->mutex);
    return state_->data;
}

state_subscription persistent_node::add_path_listener(std::function<void(const std::string&)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), path_, "persistent node path listener is empty");
    const auto id = state_->listeners.add(std::move(listener));
    return state_subscription([weak = std::weak_ptr<state>(state_), id] {
        if (auto s = weak.lock()) s->listeners.remove(id);
    });
}

}  // namespace zkr
