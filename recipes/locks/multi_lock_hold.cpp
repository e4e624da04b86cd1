#include <zkr/multi_lock_hold.hpp>

#include "multi_hold.hpp"

#include <zkr/error.hpp>

#include <boost/asio/system_executor.hpp>

namespace zkr {

using boost::system::error_code;

multi_lock_hold& multi_lock_hold::operator=(multi_lock_hold&& other) noexcept {
    if (this != &other) {
        if (auto held = std::move(held_)) held->release_in_background();
        held_ = std::move(other.held_);
    }
    return *this;
}

multi_lock_hold::~multi_lock_hold() {
    if (auto held = std::move(held_)) held->release_in_background();
}

boost::asio::any_io_executor multi_lock_hold::callbacks_of(const detail::multi_hold* held) {
    if (!held || !held->client()) return boost::asio::system_executor();
    return detail::callback_executor(detail::connection_of(*held->client()));
}

void multi_lock_hold::release_all(std::shared_ptr<detail::multi_hold> held, detail::unique_function<void(const error_code&)> done) {
    if (!held) return done(make_error_code(errc::lock_not_held));
    held->release([held, done = std::move(done)](const error_code& ec) mutable { done(ec); });
}

void multi_lock_hold::release(error_code& ec) noexcept {
    auto held = std::move(held_);
    ec = held ? held->release_and_wait() : make_error_code(errc::lock_not_held);
}

void multi_lock_hold::release() {
    const auto path = held_ ? held_->first_path() : std::string();
    error_code ec;
    release(ec);
    if (ec == errc::lock_not_held) detail::throw_if(ec, path, "release of a multi-lock hold that this object does not own (already released, or moved from)");
    detail::throw_if(ec, path, ec.message() + " while releasing the multi-lock");
}

hold_state multi_lock_hold::state() const { return held_ ? held_->state() : hold_state::released; }

std::stop_token multi_lock_hold::stop_token() const noexcept { return held_ ? held_->stop_token() : detail::stopped_token(); }

namespace {
const detail::multi_hold& checked(const std::shared_ptr<detail::multi_hold>& held) {
    if (!held) throw zkr::error(make_error_code(errc::lock_not_held), {}, "this object owns no multi-lock hold (released, moved from, or empty)");
    return *held;
}
}  // namespace

std::vector<std::int64_t> multi_lock_hold::fencing_tokens() const { return checked(held_).fencing_tokens(); }

std::vector<std::string> multi_lock_hold::node_paths() const { return checked(held_).node_paths(); }

std::vector<multi_result> multi_lock_hold::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    ec = {};
    if (!held_) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    return held_->guarded_multi(std::move(ops), ec);
}

std::vector<multi_result> multi_lock_hold::guarded_multi(std::vector<multi_op> ops) {
    const auto& held = checked(held_);
    error_code ec;
    auto r = held.guarded_multi(std::move(ops), ec);
    detail::throw_guarded_multi_error(ec, held.first_path(), "multi_lock_hold");
    return r;
}

}  // namespace zkr
