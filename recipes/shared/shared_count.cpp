// zkr::shared_count: a count_machine (recipes/count_machine.hpp) on a zk_engine; this file holds
// only what the public class adds: the node's creation, the first read waited for, count() and
// the listeners.
#include <zkr/shared_count.hpp>

#include "count_machine.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/listener_registry.hpp"

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <future>
#include <mutex>

namespace zkr {

using boost::system::error_code;

namespace {

const char* format_name(count_format f) {
    return f == count_format::decimal_text ? "decimal text" : "4 big-endian bytes (Curator's SharedCount)";
}

// Node data for a message, control characters (a binary count's bytes) escaped.
std::string shown(const std::string& data) { return "\"" + printable_path(data) + "\""; }

}  // namespace

// What the engine's outcomes share with the object; the engine holds it weakly.
struct shared_count::state {
    client& c;
    std::string path;
    count_format format;
    mutable std::mutex mutex;
    std::int32_t value = 0;    // under mutex, with version
    std::int32_t version = -1;
    detail::listener_registry<std::function<void(std::int32_t)>> listeners;
    std::shared_ptr<detail::zk_engine<detail::count_machine>> engine;
    // The constructor waits for the first outcome: a value, or why there is none.
    std::optional<std::promise<std::pair<error_code, std::string>>> first;  // under mutex

    state(client& cl, std::string p, count_format f) : c(cl), path(std::move(p)), format(f) {}

    void settle_first(const error_code& ec, std::string data = {}) {
        std::lock_guard lock(mutex);
        if (first) {
            first->set_value({ec, std::move(data)});
            first.reset();
        }
    }

    // Network thread.
    void on_outcome(const detail::count_machine::action& a) {
        if (const auto* r = std::get_if<detail::count_out::value_read>(&a)) {
            {
                std::lock_guard lock(mutex);
                value = r->value;
                version = r->version;
            }
            // The listeners of now, before the constructor may return: one added after the first
            // read does not hear it.
            auto targets = r->changed ? listeners.snapshot() : decltype(listeners.snapshot()){};
            settle_first({});
            if (targets.empty()) return;
            boost::asio::post(detail::callback_executor(detail::connection_of(c)), [targets = std::move(targets), v = r->value] {
                for (const auto& fn : targets) fn(v);
            });
        } else if (const auto* u = std::get_if<detail::count_out::unreadable>(&a)) {
            c.logger()->error("shared count {}: the node holds {}, not a count in {}; keeping {}", path, shown(u->data), format_name(format), value);
            settle_first(make_error_code(errc::invalid_argument), u->data);
        } else if (std::holds_alternative<detail::count_out::gone>(a)) {
            c.logger()->warn("shared count {}: the node is gone; keeping the last value until it returns", path);
            settle_first(make_error_code(errc::no_node));
        } else if (const auto* f = std::get_if<detail::count_out::read_failed>(&a)) {
            c.logger()->warn("shared count {}: read failed: {}", path, f->ec.message());
            settle_first(f->ec);
        }
    }
};

shared_count::shared_count(client& c, std::string path, std::int32_t seed, shared_count_options options)
    : client_(c), path_(std::move(path)), format_(options.format), state_(std::make_shared<state>(c, path_, format_)) {
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid shared count path \"" + path_ + "\": " + *e);
    error_code ec;
    client_.create(path_, count_to_data(seed, format_), {.create_parents = true}, ec);
    if (ec && ec != errc::node_exists) detail::throw_if(ec, path_, ec.message() + " while creating the shared count");
    // The first value: one read that also sets the watch, waited for here.
    auto first = state_->first.emplace().get_future();
    std::weak_ptr<state> weak = state_;
    state_->engine = std::make_shared<detail::zk_engine<detail::count_machine>>(
        client_, detail::count_machine(path_, format_), [weak](const detail::count_machine::action& a) {
            if (auto s = weak.lock()) s->on_outcome(a);
        });
    state_->engine->start(detail::count_in::start{});
    const auto [read_ec, data] = first.get();
    if (read_ec == errc::invalid_argument)
        throw zkr::error(read_ec, path_, "the node " + path_ + " holds " + shown(data) + ", not a count in " + format_name(format_) +
                                             " (shared_count_options::format)");
    detail::throw_if(read_ec, path_, read_ec.message() + " while reading the shared count");
}

shared_count::~shared_count() { state_->engine->stop(); }

std::int32_t shared_count::count() const {
    std::lock_guard lock(state_->mutex);
    return state_->value;
}

void shared_count::set_count(std::int32_t value) { client_.set_data(path_, count_to_data(value, format_), -1); }

bool shared_count::try_set_count(std::int32_t expected, std::int32_t value) {
    std::int32_t version;
    {
        std::lock_guard lock(state_->mutex);
        if (state_->value != expected) return false;
        version = state_->version;
    }
    error_code ec;
    client_.set_data(path_, count_to_data(value, format_), version, ec);
    if (ec == errc::bad_version) return false;
    detail::throw_if(ec, path_, ec.message() + " while setting the shared count");
    return true;
}

state_subscription shared_count::add_listener(std::function<void(std::int32_t)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), path_, "shared count listener is empty");
    const auto id = state_->listeners.add(std::move(listener));
    return state_subscription([weak = std::weak_ptr<state>(state_), id] {
        if (auto s = weak.lock()) s->listeners.remove(id);
    });
}

}  // namespace zkr
