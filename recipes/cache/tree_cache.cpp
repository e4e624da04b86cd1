// zkr::tree_cache: a tree_cache_machine on a zk_engine; this file holds only what the public class
// adds: a copy of the view for any thread, the waits for initialized, and the listeners.
#include <zkr/tree_cache.hpp>

#include "tree_cache_machine.hpp"
#include "../core/timed_waits.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/listener_registry.hpp"

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>

namespace zkr {

// What the engine's outcomes share with the object; the engine holds it weakly.
struct tree_cache::state {
    client& c;
    std::string path;
    mutable std::mutex mutex;
    mutable std::condition_variable initialized_cv;
    std::map<std::string, cached_node> shown;  // under mutex
    bool initialized = false, started = false, closed = false;  // under mutex
    detail::listener_registry<std::function<void(const cache_event&)>> listeners;
    std::shared_ptr<detail::zk_engine<detail::tree_cache_machine, state>> engine;
    boost::asio::any_io_executor callbacks;
    std::shared_ptr<detail::timed_waits> waits;  // async_wait_initialized's; added and taken under mutex

    state(client& cl, std::string p)
        : c(cl), path(std::move(p)), callbacks(detail::callback_executor(detail::connection_of(cl))),
          waits(std::make_shared<detail::timed_waits>(callbacks)) {}

    // Every async wait ends (after the mutex is let go: a completion only posts).
    static void settle(std::vector<wait_done> ended, const boost::system::error_code& ec, bool done) {
        for (auto& fn : ended) fn(ec, done);
    }

    // Network thread: the copy follows the events, then the listeners hear them in order.
    void on_outcome(const detail::tree_cache_machine::action& a) {
        const auto& e = std::get<cache_event>(a);
        std::vector<wait_done> ended;
        {
            std::lock_guard lock(mutex);
            switch (e.type) {
                case cache_event_type::added: case cache_event_type::updated: shown[e.path] = *e.node; break;
                case cache_event_type::removed: shown.erase(e.path); break;
                case cache_event_type::initialized:
                    initialized = true;
                    ended = waits->take_all();
                    break;
                default: break;
            }
        }
        if (e.type == cache_event_type::initialized) {
            initialized_cv.notify_all();
            settle(std::move(ended), {}, true);
        }
        auto targets = listeners.snapshot();
        if (targets.empty()) return;
        boost::asio::post(detail::callback_executor(detail::connection_of(c)), [targets = std::move(targets), e, logger = c.logger(), p = path] {
            for (const auto& fn : targets) {
                try {
                    fn(e);
                } catch (const std::exception& ex) {
                    logger->error("tree_cache {}: a listener threw: {}", p, ex.what());
                } catch (...) {
                    logger->error("tree_cache {}: a listener threw", p);
                }
            }
        });
    }
};

tree_cache::tree_cache(client& c, std::string path, tree_cache_options options)
    : client_(c), path_(std::move(path)), options_(options) {
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid tree cache path \"" + path_ + "\": " + *e);
    if (options_.max_depth < 0)
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         "tree cache max_depth " + std::to_string(options_.max_depth) + " is negative (0: the node alone)");
    for (const auto& pattern : options_.skip_names)
        if (pattern.empty()) throw zkr::error(make_error_code(errc::invalid_argument), path_, "tree cache skip_names has an empty pattern");
    state_ = std::make_shared<state>(c, path_);
}

tree_cache::~tree_cache() { close(); }

// Under the mutex, so that a close() on another thread either comes first (and start refuses)
// or finds the engine to stop. (engine->start only posts: it never waits for the network thread.)
void tree_cache::start() {
    std::lock_guard lock(state_->mutex);
    if (state_->closed) throw zkr::error(make_error_code(errc::invalid_argument), path_, "tree cache " + path_ + " is closed");
    if (state_->started) throw zkr::error(make_error_code(errc::invalid_argument), path_, "tree cache " + path_ + " is started already");
    state_->started = true;
    std::weak_ptr<state> weak = state_;
    state_->engine = std::make_shared<detail::zk_engine<detail::tree_cache_machine, state>>(
        client_, detail::tree_cache_machine({.root = path_, .max_depth = options_.max_depth, .cache_data = options_.cache_data,
                                             .skip_names = options_.skip_names, .max_data = options_.max_data_bytes}),
        weak);
    state_->engine->start(detail::tree_in::start{client_.session_id()});
}

void tree_cache::close() noexcept {
    std::shared_ptr<detail::zk_engine<detail::tree_cache_machine, state>> engine;
    std::vector<wait_done> ended;
    {
        std::lock_guard lock(state_->mutex);
        if (state_->closed) return;
        state_->closed = true;
        engine = state_->engine;
        ended = state_->waits->take_all();
    }
    if (engine) engine->stop();
    state::settle(std::move(ended), make_error_code(errc::closed), false);
}

boost::asio::any_io_executor tree_cache::callback_executor() const { return state_->callbacks; }

void tree_cache::start_wait(const std::shared_ptr<state>& s, std::chrono::milliseconds timeout, wait_done done) {
    std::unique_lock lock(s->mutex);
    const auto answer = [&](const boost::system::error_code& ec, bool initialized) {
        lock.unlock();
        done(ec, initialized);
    };
    if (timeout.count() < 0) return answer(make_error_code(errc::invalid_argument), false);
    if (s->initialized) return answer({}, true);
    if (s->closed) return answer(make_error_code(errc::closed), false);
    if (timeout.count() == 0) return answer({}, false);
    s->waits->add(timeout, std::move(done));
}

bool tree_cache::wait_initialized(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(state_->mutex);
    return state_->initialized_cv.wait_for(lock, timeout, [&] { return state_->initialized; });
}

std::optional<cached_node> tree_cache::get(std::string_view path) const {
    std::lock_guard lock(state_->mutex);
    const auto it = state_->shown.find(std::string(path));
    if (it == state_->shown.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> tree_cache::children(std::string_view path) const {
    std::vector<std::string> names;
    const std::string parent(path);
    std::lock_guard lock(state_->mutex);
    if (!state_->shown.count(parent)) return names;
    const auto prefix = parent == "/" ? parent : parent + "/";
    for (auto it = state_->shown.lower_bound(prefix); it != state_->shown.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        if (it->first.find('/', prefix.size()) == std::string::npos) names.push_back(it->first.substr(prefix.size()));
    return names;
}

std::map<std::string, cached_node> tree_cache::view() const {
    std::lock_guard lock(state_->mutex);
    return state_->shown;
}

state_subscription tree_cache::add_listener(std::function<void(const cache_event&)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), path_, "tree cache listener is empty");
    const auto id = state_->listeners.add(std::move(listener));
    return state_subscription([weak = std::weak_ptr<state>(state_), id] {
        if (auto s = weak.lock()) s->listeners.remove(id);
    });
}

}  // namespace zkr
