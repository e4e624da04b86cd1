#include <zkr/lease.hpp>
#include <zkr/lock_hold.hpp>

#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

namespace zkr {

using boost::system::error_code;

lock_hold& lock_hold::operator=(lock_hold&& other) noexcept {
    if (this != &other) {
        if (auto g = std::move(group_)) detail::release_quietly(*g->driver, take_last(g));
        group_ = std::move(other.group_);
    }
    return *this;
}

lock_hold::~lock_hold() {
    if (auto g = std::move(group_)) detail::release_quietly(*g->driver, take_last(g));
}

std::shared_ptr<detail::hold> lock_hold::take_last(std::shared_ptr<group> g) {
    // The others of this acquire still hold the node: nothing to send.
    return --g->open > 0 ? nullptr : g->hold;
}

std::shared_ptr<lock_hold::group> lock_hold::share(std::shared_ptr<detail::lock_driver> driver, std::shared_ptr<detail::hold> h,
                                                  std::string data, std::int32_t handles) {
    auto g = std::make_shared<group>();
    g->driver = std::move(driver);
    g->hold = std::move(h);
    g->data = std::move(data);
    g->open = handles;
    return g;
}

void lock_hold::release(error_code& ec) noexcept {
    ec = {};
    auto g = std::move(group_);
    if (!g) {
        ec = make_error_code(errc::lock_not_held);
        return;
    }
    try {
        if (auto h = take_last(g)) ec = g->driver->release_sync(h);
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

hold_view lock_hold::view() const noexcept { return hold_view(group_ ? group_->hold : nullptr); }

std::vector<multi_result> lock_hold::guarded_multi(std::vector<multi_op> ops) {
    const auto& g = checked();
    error_code ec;
    auto r = g.hold->guarded_multi(std::move(ops), ec);
    detail::throw_if(ec, g.hold->node_path(), ec.message() + " in a guarded write");
    return r;
}

std::string lease::node_name() const { return std::string(zkr::node_name(checked().hold->node_path())); }
const std::string& lease::data() const { return checked().data; }

}  // namespace zkr
