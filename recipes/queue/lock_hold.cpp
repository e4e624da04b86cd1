#include "hold_access.hpp"

#include <zkr/lease.hpp>
#include <zkr/lock_hold.hpp>

#include <zkr/detail/lock_ops.hpp>
#include <zkr/path.hpp>

#include <boost/asio/system_executor.hpp>
#include <spdlog/spdlog.h>

namespace zkr {

using boost::system::error_code;

using detail::hold_access;

std::shared_ptr<lock_hold::group> hold_access::share(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h,
                                                    std::string data, std::int32_t handles) {
    auto g = std::make_shared<group>();
    g->driver = std::move(driver);
    g->hold = std::move(h);
    g->data = std::move(data);
    g->open = handles;
    return g;
}

lock_hold& lock_hold::operator=(lock_hold&& other) noexcept {
    if (this != &other) {
        if (auto g = std::move(group_)) detail::release_quietly(*g->driver, hold_access::take_last(g));
        group_ = std::move(other.group_);
    }
    return *this;
}

lock_hold::~lock_hold() {
    if (auto g = std::move(group_)) detail::release_quietly(*g->driver, hold_access::take_last(g));
}


lock_hold hold_access::make_hold(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h) {
    return lock_hold(share(std::move(driver), std::move(h), {}, 1));
}

std::vector<lease> hold_access::make_leases(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h,
                                                    std::int32_t qty, std::string data) {
    auto g = share(std::move(driver), std::move(h), std::move(data), qty);
    std::vector<lease> out;
    out.reserve(static_cast<std::size_t>(qty));
    for (std::int32_t i = 0; i < qty; ++i) out.push_back(lease(g));
    return out;
}

boost::asio::any_io_executor lock_hold::callbacks_of(const group* g) {
    if (!g) return boost::asio::system_executor();
    return detail::callback_executor(detail::connection_of(g->driver->get_client()));
}

void lock_hold::release_share(std::shared_ptr<group> g, detail::unique_function<void(const error_code&)> done) {
    if (!g) return done(make_error_code(errc::lock_not_held));
    detail::start_release(*g->driver, hold_access::take_last(g), {}, std::move(done));
}

void lock_hold::release(error_code& ec) noexcept {
    ec = {};
    auto g = std::move(group_);
    if (!g) {
        ec = make_error_code(errc::lock_not_held);
        return;
    }
    try {
        if (auto h = hold_access::take_last(g)) ec = g->driver->release_sync(h);
    } catch (const std::exception&) {  // out of memory: the hold stays with its session
        ec = make_error_code(errc::system_error);
    }
}

void lock_hold::release() {
    const auto path = group_ ? group_->hold->node_path() : std::string();
    error_code ec;
    release(ec);
    if (ec == errc::lock_not_held) detail::throw_if(ec, path, "release of a hold that this object does not own (already released, or moved from)");
    detail::throw_if(ec, path, ec.message() + " while releasing " + path);
}

const lock_hold::group& lock_hold::checked() const {
    if (!group_) throw zkr::error(make_error_code(errc::lock_not_held), {}, "this object owns no hold (released, moved from, or empty)");
    return *group_;
}

std::string lock_hold::node_path() const { return checked().hold->node_path(); }
std::int64_t lock_hold::fencing_token() const { return checked().hold->fencing_token(); }
hold_state lock_hold::state() const { return group_ ? group_->hold->caller_state() : hold_state::released; }
std::stop_token lock_hold::stop_token() const noexcept { return group_ ? group_->hold->stop_token() : detail::stopped_token(); }

hold_view lock_hold::view() const noexcept { return detail::hold_access::view_of(group_ ? group_->hold : nullptr); }

std::vector<multi_result> lock_hold::guarded_multi(std::vector<multi_op> ops) {
    const auto& g = checked();
    error_code ec;
    auto r = g.hold->guarded_multi(std::move(ops), ec);
    detail::throw_if(ec, g.hold->node_path(), ec.message() + " in a guarded write");
    return r;
}

std::vector<multi_result> lock_hold::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    ec = {};
    if (!group_) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    return group_->hold->guarded_multi(std::move(ops), ec);
}

std::string lease::node_name() const { return std::string(zkr::node_name(checked().hold->node_path())); }
const std::string& lease::data() const { return checked().data; }

}  // namespace zkr
