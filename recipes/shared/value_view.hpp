// What zkr::shared_count and zkr::shared_value share: a value_machine (value_machine.hpp) on a
// zk_engine, its newest value under a mutex for any thread, the node's creation and the first read
// waited for, the listeners, and the writes (each shows what it wrote, or after a conflict what it
// read, before it returns). The public classes add only their types and messages.
#pragma once

#include "value_machine.hpp"
#include "../core/zk_engine.hpp"

#include "../../src/listener_registry.hpp"

#include <zkr/client.hpp>
#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace zkr::detail {

template <typename Codec>
class value_view : public std::enable_shared_from_this<value_view<Codec>> {
public:
    using machine = value_machine<Codec>;
    using value_type = typename Codec::value_type;
    using listener = std::function<void(const value_type&, std::int32_t version)>;

    /// what: the recipe's name for messages ("shared count"); expected: what the node must hold,
    /// for the message when it holds something else.
    value_view(client& c, std::string path, Codec codec, std::string what, std::string expected)
        : c_(c), path_(std::move(path)), codec_(std::move(codec)), what_(std::move(what)), expected_(std::move(expected)) {}

    /// Creates the node with `seed` when it does not exist (missing parents become containers),
    /// starts the view and waits for its first read. Throws zkr::error: invalid_path,
    /// invalid_argument when the node holds no value the codec reads, or why it could not read.
    void open(const std::string& seed) {
        if (auto e = path_error(path_))
            throw zkr::error(make_error_code(errc::invalid_path), path_, "invalid " + what_ + " path \"" + path_ + "\": " + *e);
        boost::system::error_code ec;
        c_.create(path_, seed, {.create_parents = true}, ec);
        if (ec && ec != errc::node_exists) throw_if(ec, path_, ec.message() + " while creating the " + what_);
        auto first = first_.emplace().get_future();
        std::weak_ptr<value_view> weak = this->shared_from_this();
        engine_ = std::make_shared<zk_engine<machine, value_view>>(c_, machine(path_, codec_), weak);
        engine_->start(value_in::start{});
        const auto [read_ec, data] = first.get();
        if (!read_ec) return;
        engine_->stop();
        if (read_ec == errc::invalid_argument)
            throw zkr::error(read_ec, path_, "the node " + path_ + " holds " + shown(data) + ", not " + expected_);
        throw_if(read_ec, path_, read_ec.message() + " while reading the " + what_);
    }

    /// Stops the view (its engine hears nothing more). Any thread; more than once.
    void close() noexcept {
        if (engine_) engine_->stop();
    }

    /// The newest value applied, and its version (no I/O).
    std::pair<value_type, std::int32_t> current() const {
        std::lock_guard lock(mutex_);
        return {value_, version_};
    }

    /// An unconditional write; the view shows it before this returns.
    void set(std::string data) {
        const auto st = c_.set_data(path_, data, -1);
        show(std::move(data), st);
    }

    /// A write only at `version`; false when the node has another version (the view then shows the
    /// node as read after the conflict, or as the watch brings it).
    bool try_set(std::int32_t version, std::string data) {
        boost::system::error_code ec;
        const auto st = c_.set_data(path_, data, version, ec);
        if (ec == errc::bad_version) {
            boost::system::error_code read_ec;
            auto now = c_.get_data(path_, read_ec);
            if (!read_ec) show(std::move(now.data), now.stat);
            return false;
        }
        throw_if(ec, path_, ec.message() + " while setting the " + what_);
        show(std::move(data), st);
        return true;
    }

    /// Registers l; the subscription removes it (the view may have gone by then).
    state_subscription subscribe(listener l) {
        const auto id = listeners_.add(std::move(l));
        return state_subscription([weak = this->weak_from_this(), id] {
            if (auto s = weak.lock()) s->listeners_.remove(id);
        });
    }

private:
    // Node data for a message, control characters (a binary count's bytes) escaped.
    static std::string shown(const std::string& data) { return "\"" + printable_path(data) + "\""; }

    // The machine takes what this process wrote or read (if it is newer than what the view shows),
    // and this waits until it has: the network thread runs its work in order, so once a later
    // no-op has run there the value is applied.
    void show(std::string data, const zkr::stat& st) {
        if (!engine_->post(value_in::observed{std::move(data), st})) return;  // closing: nothing to show
        std::promise<void> applied;
        auto done = applied.get_future();
        if (run_on_network(connection_of(c_), [p = std::move(applied)]() mutable { p.set_value(); })) done.wait();
    }

    void settle_first(const boost::system::error_code& ec, std::string data = {}) {
        std::lock_guard lock(mutex_);
        if (first_) {
            first_->set_value({ec, std::move(data)});
            first_.reset();
        }
    }

    friend class zk_engine<machine, value_view>;  // (on_outcome)
    // Network thread.
    void on_outcome(const typename machine::action& a) {
        if (const auto* r = std::get_if<typename machine::value_read>(&a)) {
            {
                std::lock_guard lock(mutex_);
                value_ = r->value;
                version_ = r->version;
            }
            // The listeners of now, before the constructor may return: one added after the first
            // read does not hear it.
            auto targets = r->changed ? listeners_.snapshot() : decltype(listeners_.snapshot()){};
            settle_first({});
            if (targets.empty()) return;
            boost::asio::post(callback_executor(connection_of(c_)), [targets = std::move(targets), v = r->value, version = r->version] {
                for (const auto& fn : targets) fn(v, version);
            });
        } else if (const auto* u = std::get_if<value_out::unreadable>(&a)) {
            c_.logger()->error("{} {}: the node holds {}, not {}; keeping the last value", what_, path_, shown(u->data), expected_);
            settle_first(make_error_code(errc::invalid_argument), u->data);
        } else if (std::holds_alternative<value_out::gone>(a)) {
            c_.logger()->warn("{} {}: the node is gone; keeping the last value until it returns", what_, path_);
            settle_first(make_error_code(errc::no_node));
        } else if (const auto* f = std::get_if<value_out::read_failed>(&a)) {
            c_.logger()->warn("{} {}: read failed: {}", what_, path_, f->ec.message());
            settle_first(f->ec);
        }
    }

    client& c_;
    const std::string path_;
    const Codec codec_;
    const std::string what_, expected_;
    mutable std::mutex mutex_;
    value_type value_{};  // under mutex_, with version_
    std::int32_t version_ = -1;
    listener_registry<listener> listeners_;
    std::shared_ptr<zk_engine<machine, value_view>> engine_;
    // open() waits for the first outcome: a value, or why there is none.
    std::optional<std::promise<std::pair<boost::system::error_code, std::string>>> first_;  // under mutex_
};

}  // namespace zkr::detail
