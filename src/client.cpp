#include <zkr/client.hpp>

#include "client_hooks.hpp"
#include "connection.hpp"
#include "parse_number.hpp"

#include "sync_result.hpp"
#include <zkr/path.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

namespace zkr {
namespace {

constexpr std::size_t max_request_bytes = 1024 * 1024 - 1;  // ZooKeeper's jute.maxbuffer default
constexpr std::size_t request_overhead = 1024;              // headers, ACL, path framing

[[noreturn]] void bad_option(const std::string& what) {
    throw zkr::error(make_error_code(errc::invalid_argument), {}, what);
}

// "host:port,host:port[/chroot]"; hosts may be names, IPv4 or [IPv6].
void check_connect_string(const std::string& cs) {
    if (cs.empty())
        bad_option("connect_string is empty; expected \"host:port[,host:port...][/chroot]\", e.g. \"127.0.0.1:2181\"");
    const auto slash = cs.find('/');
    const std::string hosts = cs.substr(0, slash);
    if (slash != std::string::npos) {
        if (auto e = path_error(cs.substr(slash)))
            bad_option("connect_string \"" + cs + "\" has an invalid chroot: " + *e);
    }
    if (hosts.empty()) bad_option("connect_string \"" + cs + "\" names no server; expected host:port before any chroot");
    std::size_t start = 0;
    while (start <= hosts.size()) {
        const auto end = std::min(hosts.find(',', start), hosts.size());
        const std::string entry = hosts.substr(start, end - start);
        const auto colon = entry.rfind(':');
        const bool bracketed = !entry.empty() && entry.front() == '[';
        if (entry.empty() || colon == std::string::npos || colon == 0 || (bracketed && entry[colon - 1] != ']'))
            bad_option(entry == cs ? "connect_string \"" + cs + "\" is not host:port"
                                   : "connect_string \"" + cs + "\": \"" + entry + "\" is not host:port");
        const std::string port = entry.substr(colon + 1);
        const auto value = detail::parse_number<unsigned>(port);
        if (!value || *value == 0 || *value > 65535)
            bad_option("connect_string \"" + cs + "\": port \"" + port + "\" of \"" + entry +
                       "\" is not a number in 1..65535");
        for (const char ch : entry.substr(0, colon))
            if (static_cast<unsigned char>(ch) <= ' ' || ch == '/' || ch == ',')
                bad_option("connect_string \"" + cs + "\": host of \"" + entry + "\" has an invalid character");
        start = end + 1;
    }
}

client_options checked(client_options o) {
    check_connect_string(o.connect_string);
    if (o.session_timeout.count() <= 0)
        bad_option("session_timeout must be positive, got " + std::to_string(o.session_timeout.count()) + " ms");
    if (o.session_timeout > std::chrono::hours(24))
        bad_option("session_timeout must be at most 24 h, got " + std::to_string(o.session_timeout.count()) + " ms");
    if (o.connection_timeout.count() <= 0)
        bad_option("connection_timeout must be positive, got " + std::to_string(o.connection_timeout.count()) + " ms");
    if (o.blocking_call_spin.count() < 0 || o.blocking_call_spin > std::chrono::milliseconds(10))
        bad_option("blocking_call_spin must be between 0 and 10 ms (0: never spin), got " +
                   std::to_string(o.blocking_call_spin.count()) + " us");
    if (!o.retry_policy) bad_option("retry_policy is null; use zkr::default_retry_policy() or another policy");
    if (!o.name_space.empty()) {
        if (o.name_space.front() == '/')
            bad_option("name_space \"" + o.name_space + "\" must not start with '/': it is a node name, e.g. \"myapp\"");
        if (auto e = path_error("/" + o.name_space)) bad_option("name_space \"" + o.name_space + "\" is invalid: " + *e);
    }
    for (const auto& a : o.auth) {
        if (a.scheme.empty()) bad_option("an auth entry has an empty scheme; use \"digest\"");
        if (a.scheme == "digest" && a.credentials.find(':') == std::string::npos)
            bad_option("digest credentials must be \"user:password\"");
    }
    if (o.default_acl.empty()) bad_option("default_acl is empty; use zkr::open_acl_unsafe() or creator_all_acl()");
    if (!o.logger) {
        static const auto silent = std::make_shared<spdlog::logger>("zkr");
        o.logger = silent;
    }
    return o;
}

detail::failure fail(errc e, std::string message) { return {make_error_code(e), std::move(message)}; }

detail::failure check_path(const std::string& path) {
    if (auto e = path_error(path)) return fail(errc::invalid_path, "invalid path \"" + printable_path(path) + "\": " + *e);
    return {};
}

detail::failure check_data(const std::string& path, const std::string& data) {
    if (data.size() + path.size() + request_overhead > max_request_bytes)
        return fail(errc::data_too_large, "node data of " + std::to_string(data.size()) +
                                              " bytes is over ZooKeeper's limit of about 1 MiB per request");
    return {};
}

detail::failure check_version(std::int32_t v) {
    if (v < -1) return fail(errc::invalid_argument, "version must be -1 (any) or >= 0, got " + std::to_string(v));
    return {};
}

detail::failure check_create(const detail::request& r) {
    if (auto f = check_path(r.path)) return f;
    if (r.path == "/") return fail(errc::invalid_path, "cannot create the root \"/\"");
    if (auto f = check_data(r.path, r.data)) return f;
    const auto& c = r.create;
    if (has_ttl(c.mode) && c.ttl.count() <= 0)
        return fail(errc::invalid_argument, "ttl must be positive for a *_with_ttl mode, got " +
                                                std::to_string(c.ttl.count()) + " ms");
    if (!has_ttl(c.mode) && c.ttl.count() != 0)
        return fail(errc::invalid_argument, "ttl is only allowed with the *_with_ttl modes");
    if (c.acl && c.acl->empty()) return fail(errc::invalid_argument, "the node's ACL is empty");
    return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// detail: the narrow interface the templates use

namespace detail {

failure check_request(const request& r) {
    switch (r.kind) {
        case op_kind::create: return check_create(r);
        case op_kind::set_data:
            if (auto f = check_path(r.path)) return f;
            if (auto f = check_version(r.version)) return f;
            return check_data(r.path, r.data);
        case op_kind::remove:
            if (auto f = check_path(r.path)) return f;
            if (r.path == "/") return fail(errc::invalid_path, "cannot delete the root \"/\"");
            return check_version(r.version);
        case op_kind::exists:
        case op_kind::get_data:
        case op_kind::get_children: return check_path(r.path);
        case op_kind::multi: {
            if (r.ops.empty()) return fail(errc::invalid_argument, "multi needs at least one operation");
            std::size_t total = 0;
            for (std::size_t i = 0; i < r.ops.size(); ++i) {
                const auto& o = r.ops[i];
                const std::string where = "multi operation " + std::to_string(i) + ": ";
                if (auto f = check_path(o.path)) return fail(errc::invalid_path, where + f.message);
                if (auto f = check_version(o.version)) return fail(errc::invalid_argument, where + f.message);
                if (o.type == multi_op::kind::create && has_ttl(o.mode))
                    return fail(errc::invalid_argument, where + "TTL modes are not supported inside a multi");
                total += o.data.size() + o.path.size() + 64;
            }
            if (total + request_overhead > max_request_bytes)
                return fail(errc::data_too_large, "multi of " + std::to_string(total) + " bytes is over about 1 MiB");
            return {};
        }
    }
    return {};
}

void submit(connection& c, request req, completion done) { c.submit(std::move(req), std::move(done)); }

failure run_sync(connection& c, request req, response& out) {
    auto refuse = [&](failure f) {
        hand_back_path(req, out);
        return f;
    };
    if (auto f = check_request(req)) return refuse(std::move(f));
    if (c.on_network_thread())
        return refuse(fail(errc::invalid_state, "a blocking zkr call on the client's network thread would deadlock"));
    const auto started = std::chrono::steady_clock::now();
    // One result per thread, used again by its next blocking call: a thread waits in one at a
    // time, and the completion is done with it once get() returns (sync_result::reset). Taken
    // from a pool and shared with the completion, it cost about 250 instructions a call.
    thread_local sync_result<std::pair<boost::system::error_code, response>> result;
    result.reset();
    c.submit(std::move(req), [r = &result](const boost::system::error_code& ec, response&& reply) { r->set(ec, std::move(reply)); },
             /*checked=*/true);
    auto& [ec, r] = result.get(c.options().blocking_call_spin);
    out = std::move(r);
    if (ec == errc::not_connected) return {ec, not_connected_reason(c, std::chrono::steady_clock::now() - started)};
    return {ec, {}};
}

// "Not connected" alone left a user guessing for a minute: say what was missing, or what was
// tried and for how long.
std::string not_connected_reason(connection& c, std::chrono::steady_clock::duration waited) {
    if (!c.started()) return "the client was never started: call client::start() first";
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(waited).count();
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", static_cast<double>(ms) / 1000);
    const auto attempt_ms = std::chrono::duration_cast<std::chrono::milliseconds>(c.options().connection_timeout).count();
    return "not connected to ZooKeeper at " + c.options().connect_string + ": waited " + secs +
           " s for a connection (each attempt waits client_options::connection_timeout, " + std::to_string(attempt_ms) +
           " ms, and the retry_policy allowed the retries; to wait for the first connection once, call "
           "block_until_connected() after start())";
}

boost::asio::any_io_executor callback_executor(connection& c) { return c.callback_executor(); }

boost::asio::any_io_executor network_executor(connection& c) { return c.network_executor(); }
bool run_on_network(connection& c, unique_function<void()> fn) { return c.run_on_network(std::move(fn)); }
std::uint64_t add_state_observer(connection& c, unique_function<void(connection_state)> fn) {
    return c.add_observer(std::move(fn));
}
void remove_state_observer(connection& c, std::uint64_t id) { c.remove_observer(id); }
bool silent_past_receive_timeout(connection& c) { return c.silent_past_receive_timeout(); }
std::uint64_t requests_sent(connection& c) { return c.requests_sent(); }
void lose_next_replies(connection& c, int n) { c.install_reply_faults().arm(ZCONNECTIONLOSS, n); }
void expire_next_replies(connection& c, int n) { c.install_reply_faults().arm(ZSESSIONEXPIRED, n); }

bool is_started(connection& c) { return c.started(); }

std::pair<std::int64_t, std::string> session_credentials(connection& c) {
    return {c.session_id(), c.session_password()};
}

watch_function post_to_callbacks(connection& c, std::function<void(const watch_event&)> fn) {
    if (!fn) return nullptr;
    return [ex = c.callback_executor(), fn = std::move(fn)](watch_event e) mutable {
        boost::asio::post(ex, [fn = std::move(fn), e = std::move(e)] { fn(e); });
    };
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// client

state_subscription& state_subscription::operator=(state_subscription&& other) noexcept {
    if (this != &other) {
        unsubscribe();
        remove_ = std::move(other.remove_);
        other.remove_ = nullptr;
    }
    return *this;
}

state_subscription::~state_subscription() { unsubscribe(); }

void state_subscription::unsubscribe() noexcept {
    if (auto r = std::exchange(remove_, nullptr)) r();
}

client::client(client_options options) : impl_(std::make_shared<detail::connection>(checked(std::move(options)))) {}

client::~client() { close(); }

void client::start() { impl_->start(); }
void client::close() { impl_->close(); }
bool client::block_until_connected(std::chrono::milliseconds timeout) { return impl_->block_until_connected(timeout); }
bool client::block_until_connected() { return impl_->block_until_connected(impl_->options().connection_timeout); }

state_subscription client::add_state_listener(std::function<void(connection_state)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), {}, "state listener is empty");
    const auto id = impl_->add_listener(std::move(listener));
    return state_subscription([weak = std::weak_ptr<detail::connection>(impl_), id] {
        if (auto c = weak.lock()) c->remove_listener(id);
    });
}

connection_state client::state() const noexcept { return impl_->state(); }
std::int64_t client::session_id() const noexcept { return impl_->session_id(); }
std::chrono::milliseconds client::negotiated_session_timeout() const noexcept { return impl_->negotiated_timeout(); }
const client_options& client::options() const noexcept { return impl_->options(); }
const std::shared_ptr<spdlog::logger>& client::logger() const noexcept { return impl_->options().logger; }

detail::request client::make_create(std::string path, std::string data, create_options opts) {
    detail::request r;
    r.kind = detail::op_kind::create;
    r.path = std::move(path);
    r.data = std::move(data);
    r.create = std::move(opts);
    return r;
}

detail::request client::make_read(detail::op_kind kind, std::string path, detail::watch_function w) {
    detail::request r;
    r.kind = kind;
    r.path = std::move(path);
    r.watch = std::move(w);
    return r;
}

detail::request client::make_set(std::string path, std::string data, std::int32_t version) {
    detail::request r;
    r.kind = detail::op_kind::set_data;
    r.path = std::move(path);
    r.data = std::move(data);
    r.version = version;
    return r;
}

detail::request client::make_remove(std::string path, remove_options opts) {
    detail::request r;
    r.kind = detail::op_kind::remove;
    r.path = std::move(path);
    r.version = opts.version;
    r.guaranteed = opts.guaranteed;
    return r;
}

detail::request client::make_multi(std::vector<multi_op> ops) {
    detail::request r;
    r.kind = detail::op_kind::multi;
    r.ops = std::move(ops);
    return r;
}

namespace {

// Every sync overload: runs the request; with ec, reports through it; without, throws with the
// path (handed back with the failure: no copy for a call that succeeds) and the reason.
detail::response run(detail::connection& c, detail::request req, boost::system::error_code* ec) {
    req.path_back_on_error = !ec && req.kind != detail::op_kind::multi;
    detail::response out;
    auto f = detail::run_sync(c, std::move(req), out);
    if (ec) *ec = f.ec;
    else if (f.ec) detail::throw_if(f.ec, printable_path(out.path), f.message);
    return out;
}

using watcher = std::function<void(const watch_event&)>;

}  // namespace

// The overloads without a watcher are the watcher forms with none (post_to_callbacks(none) is no watch).
create_result client::create(std::string path, std::string data, create_options opts, boost::system::error_code& ec) {
    auto r = run(*impl_, make_create(std::move(path), std::move(data), std::move(opts)), &ec);
    return {std::move(r.path), r.stat};
}
create_result client::create(std::string path, std::string data, create_options opts) {
    auto r = run(*impl_, make_create(std::move(path), std::move(data), std::move(opts)), nullptr);
    return {std::move(r.path), r.stat};
}

data_result client::get_data(std::string path, boost::system::error_code& ec) { return get_data(std::move(path), watcher{}, ec); }
data_result client::get_data(std::string path) { return get_data(std::move(path), watcher{}); }
data_result client::get_data(std::string path, watcher w, boost::system::error_code& ec) {
    return extract_data(run(*impl_, make_read(detail::op_kind::get_data, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), &ec));
}
data_result client::get_data(std::string path, watcher w) {
    return extract_data(run(*impl_, make_read(detail::op_kind::get_data, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), nullptr));
}

zkr::stat client::set_data(std::string path, std::string data, std::int32_t version, boost::system::error_code& ec) {
    return run(*impl_, make_set(std::move(path), std::move(data), version), &ec).stat;
}
zkr::stat client::set_data(std::string path, std::string data, std::int32_t version) {
    return run(*impl_, make_set(std::move(path), std::move(data), version), nullptr).stat;
}

std::optional<zkr::stat> client::exists(std::string path, boost::system::error_code& ec) { return exists(std::move(path), watcher{}, ec); }
std::optional<zkr::stat> client::exists(std::string path) { return exists(std::move(path), watcher{}); }
std::optional<zkr::stat> client::exists(std::string path, watcher w, boost::system::error_code& ec) {
    return extract_exists(run(*impl_, make_read(detail::op_kind::exists, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), &ec));
}
std::optional<zkr::stat> client::exists(std::string path, watcher w) {
    return extract_exists(run(*impl_, make_read(detail::op_kind::exists, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), nullptr));
}

children_result client::get_children(std::string path, boost::system::error_code& ec) { return get_children(std::move(path), watcher{}, ec); }
children_result client::get_children(std::string path) { return get_children(std::move(path), watcher{}); }
children_result client::get_children(std::string path, watcher w, boost::system::error_code& ec) {
    return extract_children(run(*impl_, make_read(detail::op_kind::get_children, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), &ec));
}
children_result client::get_children(std::string path, watcher w) {
    return extract_children(run(*impl_, make_read(detail::op_kind::get_children, std::move(path), detail::post_to_callbacks(*impl_, std::move(w))), nullptr));
}

void client::remove(std::string path, remove_options opts, boost::system::error_code& ec) {
    run(*impl_, make_remove(std::move(path), opts), &ec);
}
void client::remove(std::string path, remove_options opts) { run(*impl_, make_remove(std::move(path), opts), nullptr); }

std::vector<multi_result> client::multi(std::vector<multi_op> ops, boost::system::error_code& ec) {
    return std::move(run(*impl_, make_multi(std::move(ops)), &ec).results);
}
std::vector<multi_result> client::multi(std::vector<multi_op> ops) {
    return std::move(run(*impl_, make_multi(std::move(ops)), nullptr).results);
}

}  // namespace zkr
