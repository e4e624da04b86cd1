// One hold as its recipe sees it: the state the lock engine publishes, its listeners, its stop
// token, and the guarded multi.
#include "hold.hpp"

#include <algorithm>
#include <iterator>

#include "../../src/observe.hpp"

#include <spdlog/spdlog.h>

namespace zkr {

std::string_view to_string(hold_state s) noexcept {
    switch (s) {
        case hold_state::held: return "held";
        case hold_state::doubtful: return "doubtful";
        case hold_state::lost: return "lost";
        case hold_state::releasing: return "releasing";
        case hold_state::released: return "released";
    }
    return "unknown";
}

namespace detail {

using boost::system::error_code;

namespace {
// The hold is over for whoever acts on it: its stop is requested from here on.
bool ended(hold_state s) { return s == hold_state::lost || s == hold_state::released || s == hold_state::releasing; }
}  // namespace

hold::hold(zkr::client& c, std::string node_path, std::int64_t fencing_token, std::int64_t session_id,
           std::shared_ptr<lock_engine> engine)
    : client_(c), node_path_(std::move(node_path)), token_(fencing_token), session_(session_id), engine_(std::move(engine)) {}

hold::~hold() = default;

std::uint64_t hold::add_listener(std::function<void(hold_state)> fn, std::function<bool()> listening) {
    return listeners_.add(std::make_shared<const listener>(listener{std::move(fn), std::move(listening)}));
}

void hold::remove_listener(std::uint64_t id) { listeners_.remove(id); }

void hold::attach_hub(std::weak_ptr<const hold_listener_hub> hub) {
    std::lock_guard lock(hub_mutex_);
    hub_ = std::move(hub);
}

void hold::set_state(hold_state s, lost_cause cause) {
    if (s == hold_state::lost) cause_.store(cause);
    const hold_state old = state_.exchange(s);
    if (old == s) return;
    client_.logger()->info("hold on {} (token {}): {} -> {}", node_path_, token_, to_string(old), to_string(s));
    if (ended(s)) request_stop();
    std::shared_ptr<const hold_listener_hub> hub;
    {
        std::lock_guard lock(hub_mutex_);
        hub = hub_.lock();
    }
    if (hub && !hub->any()) hub.reset();
    std::vector<std::function<void(hold_state)>> targets;
    for (const auto& l : listeners_.snapshot())  // (none: an empty vector, no allocation)
        if (!l->listening || l->listening()) targets.push_back(l->fn);
    if (!hub && targets.empty()) return;
    boost::asio::post(callback_executor(detail::connection_of(client_)), [hub = std::move(hub), targets = std::move(targets), s] {
        if (hub) hub->call(s);
        for (const auto& fn : targets) fn(s);
    });
}

void observe_leadership(const hold& h, const std::string& election_path, bool gained, std::string failure) {
    const auto& options = h.get_client().options();
    if (!options.observer) return;
    auto cause = lost_cause::none;
    if (!gained && h.state() == hold_state::lost) cause = h.cause();
    if (!gained && h.state() == hold_state::doubtful) cause = lost_cause::doubt;
    post_to_observer(options, callback_executor(detail::connection_of(h.get_client())),
                     leadership_event{election_path, gained, h.fencing_token(), cause, std::move(failure)});
}

void hold::want_stop() const {
    {
        std::lock_guard lock(stop_mutex_);
        if (!stop_.stop_possible()) stop_ = std::stop_source();
    }
    stop_wanted_.store(true);
}

std::stop_token hold::stop_token() const noexcept {
    want_stop();
    const auto s = state_.load();
    // Ended before anyone wanted the token: the network thread did not request the stop, so do it
    // here (this is the caller's thread, and the token has no callbacks yet).
    if (ended(s)) stop_.request_stop();
    return stop_.get_token();
}

// The work tied to this hold must stop. Asked on the callback thread: std::stop_callback runs the
// user's function in the thread that requests the stop, and that must never be the network thread.
void hold::request_stop() {
    if (!stop_wanted_.load() || stop_.stop_requested()) return;
    boost::asio::post(callback_executor(detail::connection_of(client_)), [self = shared_from_this()] { self->stop_.request_stop(); });
}

void hold::revocation_requested() {
    boost::asio::post(callback_executor(detail::connection_of(client_)), [self = shared_from_this()] {
        self->want_stop();
        self->stop_.request_stop();
        {
            std::lock_guard lock(self->revocation_mutex_);
            self->revocation_asked_ = true;
        }
        self->tell_revocation();
    });
}

void hold::on_revocation(std::function<void()> fn) {
    bool asked = false;
    {
        std::lock_guard lock(revocation_mutex_);
        on_revocation_ = std::move(fn);
        asked = revocation_asked_;
    }
    if (asked) boost::asio::post(callback_executor(detail::connection_of(client_)), [self = shared_from_this()] { self->tell_revocation(); });
}

// Once, when both the request and the listener are there.
void hold::tell_revocation() {
    if (ended(state())) return;  // released (or lost) meanwhile: nobody to ask
    std::function<void()> fn;
    {
        std::lock_guard lock(revocation_mutex_);
        if (!revocation_asked_ || !on_revocation_ || revocation_told_) return;
        revocation_told_ = true;
        fn = on_revocation_;
    }
    try {
        fn();
    } catch (const std::exception& e) {
        client_.logger()->error("hold on {}: the revocation listener threw: {}", node_path_, e.what());
    }
}

hold_state hold::caller_state() const noexcept {
    const auto s = state();
    if (s != hold_state::held) return s;
    // The connection's state changes first and the holds follow on the network thread: a caller
    // reading in between must not see held on a connection already suspended or lost (a paused
    // holder of the fault suite read held so, under TSan's slower timing).
    if (!is_connected(client_.state()) || silent_past_receive_timeout(detail::connection_of(client_))) return hold_state::doubtful;
    return s;
}

std::vector<multi_result> hold::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    return guarded_multi(std::vector<const hold*>{this}, std::move(ops), ec);
}

std::vector<multi_result> hold::guarded_multi(const std::vector<const hold*>& holds, std::vector<multi_op> ops, error_code& ec) {
    ec = {};
    if (holds.empty()) {
        ec = make_error_code(errc::lock_not_held);
        return {};
    }
    for (const auto* h : holds) {
        const auto s = h->caller_state();
        if (s != hold_state::held) {
            ec = make_error_code(s == hold_state::lost ? errc::lock_lost : errc::lock_not_held);
            return {};
        }
        // One transaction goes through one session.
        if (&h->client_ != &holds.front()->client_ || h->session_ != holds.front()->session_) {
            ec = make_error_code(errc::invalid_argument);
            return {};
        }
    }
    std::vector<multi_op> guarded;
    guarded.reserve(holds.size() + ops.size());
    for (const auto* h : holds) guarded.push_back(multi_op::check(h->node_path_));
    std::move(ops.begin(), ops.end(), std::back_inserter(guarded));
    request r;
    r.kind = op_kind::multi;
    r.ops = std::move(guarded);
    r.required_session = holds.front()->session_;
    response out;
    ec = run_sync(detail::connection_of(holds.front()->client_), std::move(r), out).ec;
    const auto checks = static_cast<std::ptrdiff_t>(std::min(holds.size(), out.results.size()));
    out.results.erase(out.results.begin(), out.results.begin() + checks);
    if (ec == errc::no_node || ec == errc::session_expired) ec = make_error_code(errc::lock_lost);
    return std::move(out.results);
}

}  // namespace detail
}  // namespace zkr
