#include <zkr/shared_count.hpp>

#include "../src/listener_registry.hpp"

#include <zkr/path.hpp>

#include "../src/parse_number.hpp"  // the client layer's one parse

#include <boost/asio/bind_executor.hpp>
#include <spdlog/spdlog.h>

#include <future>
#include <mutex>

namespace zkr {

using boost::system::error_code;

namespace {
constexpr auto parse_count = detail::parse_number<std::int32_t>;
}  // namespace

// What the watch callbacks share with the object; they hold it weakly, so they end with it.
struct shared_count::state : std::enable_shared_from_this<state> {
    client& c;
    std::string path;
    mutable std::mutex mutex;
    std::int32_t value = 0;
    std::int32_t version = -1;
    detail::listener_registry<std::function<void(std::int32_t)>> listeners;
    std::uint64_t observer = 0;

    state(client& cl, std::string p) : c(cl), path(std::move(p)) {}

    // Network thread. Reads the value and sets a watch; every event or reconnection reads again.
    // first, if given, hears the reply once it is applied (the constructor's first read).
    void read(std::function<void(const error_code&, const std::string&)> first = {}) {
        auto net = detail::network_executor(detail::connection_of(c));
        std::weak_ptr<state> weak = weak_from_this();
        c.async_get_data(path, boost::asio::bind_executor(net, [weak](watch_event e) {
                             auto self = weak.lock();
                             if (self && e.type != watch_event_type::not_watching) self->read();
                         }),
                         boost::asio::bind_executor(net, [weak, first = std::move(first)](error_code ec, data_result r) {
                             auto self = weak.lock();
                             if (first) {
                                 // Applied before the constructor returns; an error it reports itself.
                                 if (self && !ec && parse_count(r.data)) self->update(r.data, r.stat.version);
                                 first(ec, r.data);
                                 return;
                             }
                             if (!self) return;
                             if (ec == errc::no_node) return self->await_creation();
                             if (ec) {
                                 self->c.logger()->warn("shared count {}: read failed: {}", self->path, ec.message());
                                 return;  // the next reconnection reads again
                             }
                             self->update(r.data, r.stat.version);
                         }));
    }

    void await_creation() {
        c.logger()->warn("shared count {}: the node is gone; keeping the last value until it returns", path);
        auto net = detail::network_executor(detail::connection_of(c));
        std::weak_ptr<state> weak = weak_from_this();
        c.async_exists(path, boost::asio::bind_executor(net, [weak](watch_event e) {
                           auto self = weak.lock();
                           if (self && e.type == watch_event_type::node_created) self->read();
                       }),
                       boost::asio::bind_executor(net, [weak](error_code ec, std::optional<zkr::stat> st) {
                           auto self = weak.lock();
                           if (self && !ec && st) self->read();
                       }));
    }

    void update(const std::string& data, std::int32_t new_version) {
        const auto parsed = parse_count(data);
        if (!parsed) {
            c.logger()->error("shared count {}: \"{}\" is not a 32-bit integer; keeping {}", path, data, value);
            return;
        }
        {
            std::lock_guard lock(mutex);
            version = new_version;
            if (*parsed == value) return;
            value = *parsed;
        }
        auto targets = listeners.snapshot();
        if (targets.empty()) return;
        boost::asio::post(detail::callback_executor(detail::connection_of(c)), [targets = std::move(targets), v = *parsed] {
            for (const auto& fn : targets) fn(v);
        });
    }
};

shared_count::shared_count(client& c, std::string path, std::int32_t seed)
    : client_(c), path_(std::move(path)), state_(std::make_shared<state>(c, path_)) {
    if (auto e = path_error(path_))
        throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid shared count path \"" + path_ + "\": " + *e);
    error_code ec;
    client_.create(path_, std::to_string(seed), {.create_parents = true}, ec);
    if (ec && ec != errc::node_exists) detail::throw_if(ec, path_, ec.message() + " while creating the shared count");
    // The first value: one read that also sets the watch, waited for here.
    std::promise<std::pair<error_code, std::string>> first;
    auto& conn = detail::connection_of(client_);
    boost::asio::dispatch(detail::network_executor(conn), [s = state_, &first] {
        s->read([&first](const error_code& e, const std::string& data) { first.set_value({e, data}); });
    });
    const auto [read_ec, data] = first.get_future().get();
    detail::throw_if(read_ec, path_, read_ec.message() + " while reading the shared count");
    if (!parse_count(data))
        throw zkr::error(make_error_code(errc::invalid_argument), path_,
                         "the node " + path_ + " holds \"" + data + "\", not a 32-bit integer count");
    std::weak_ptr<state> weak = state_;
    state_->observer = detail::add_state_observer(conn, [weak](connection_state s) {
        auto self = weak.lock();
        if (self && (s == connection_state::connected || s == connection_state::reconnected)) self->read();
    });
}

shared_count::~shared_count() {
    if (state_->observer) detail::remove_state_observer(detail::connection_of(client_), state_->observer);
}

std::int32_t shared_count::count() const {
    std::lock_guard lock(state_->mutex);
    return state_->value;
}

void shared_count::set_count(std::int32_t value) { client_.set_data(path_, std::to_string(value), -1); }

bool shared_count::try_set_count(std::int32_t expected, std::int32_t value) {
    std::int32_t version;
    {
        std::lock_guard lock(state_->mutex);
        if (state_->value != expected) return false;
        version = state_->version;
    }
    error_code ec;
    client_.set_data(path_, std::to_string(value), version, ec);
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
