#include <zkr/detail/lock_driver.hpp>

#include <zkr/detail/sync_result.hpp>
#include <zkr/path.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <set>

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

using clock = std::chrono::steady_clock;
using boost::system::error_code;

std::string default_node_data() {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(::getpid());
}

// The path as it can be shown in a message: a NUL would cut what() short, so bytes below 0x20 and
// 0x7f are written as \xNN.
std::string printable(const std::string& path) {
    std::string out;
    for (const unsigned char ch : path) {
        if (ch >= 0x20 && ch != 0x7f) {
            out += static_cast<char>(ch);
            continue;
        }
        out += "\\x";
        out += "0123456789abcdef"[ch >> 4];
        out += "0123456789abcdef"[ch & 15];
    }
    return out;
}

std::stop_token stopped_token() noexcept {
    static const std::stop_source stopped = [] {
        std::stop_source s;
        s.request_stop();
        return s;
    }();
    return stopped.get_token();
}

void log_quiet_release(zkr::client& c, const std::string& node, const error_code& ec) noexcept {
    if (!ec) return;
    try {
        if (ec == errc::lock_lost)
            c.logger()->warn("the hold on {} had ended before its release (session ended, client closed, or the node "
                             "deleted or written by someone else)", node);
        else if (ec == errc::lock_not_held)
            c.logger()->error("release of {} by an owner that does not hold it: nothing released", node);
        else if (!is_retryable(ec))  // a pending delete was logged when it failed
            c.logger()->warn("releasing {}: {}", node, ec.message());
    } catch (...) {  // a logger's sink may throw; a release reports nothing then
    }
}

void release_quietly(lock_driver& driver, const std::shared_ptr<hold>& h) noexcept {
    if (!h) return;
    error_code ec;
    try {
        ec = driver.release_sync(h);
    } catch (const std::exception&) {  // out of memory: the node stays with the session
        ec = make_error_code(errc::system_error);
    }
    log_quiet_release(driver.get_client(), h->node_path(), ec);
}

void check_lock_path(const std::string& path) {
    if (auto e = path_error(path))
        throw zkr::error(make_error_code(errc::invalid_path), path, "invalid lock path \"" + printable(path) + "\": " + *e);
    if (path == "/") throw zkr::error(make_error_code(errc::invalid_path), path, "the root \"/\" cannot be a lock path");
}

// ---------------------------------------------------------------------------------------------
// hold

hold::hold(zkr::client& c, std::string node_path, std::int64_t fencing_token, std::int64_t session_id,
           bool release_passes_on, bool signal_release)
    : client_(c),
      node_path_(std::move(node_path)),
      token_(fencing_token),
      session_(session_id),
      release_passes_on_(release_passes_on),
      signal_release_(release_passes_on && signal_release) {}

hold::~hold() = default;

std::uint64_t hold::add_listener(std::function<void(hold_state)> fn, std::function<bool()> listening) {
    std::lock_guard lock(listeners_mutex_);
    const auto id = next_listener_++;
    listeners_.emplace(id, listener{std::move(fn), std::move(listening)});
    return id;
}

void hold::remove_listener(std::uint64_t id) {
    std::lock_guard lock(listeners_mutex_);
    listeners_.erase(id);
}

void hold::set_state(hold_state s) {
    const hold_state old = state_.exchange(s);
    if (old == s) return;
    client_.logger()->info("hold on {} (token {}): {} -> {}", node_path_, token_, to_string(old), to_string(s));
    if (s == hold_state::lost || s == hold_state::released || s == hold_state::releasing) {
        if (own_watch_timer_) own_watch_timer_->cancel();
    }
    if (s == hold_state::lost || s == hold_state::released) {
        if (observer_) remove_state_observer(client_.connection(), std::exchange(observer_, 0));
    }
    if (s == hold_state::lost || s == hold_state::released || s == hold_state::releasing) request_stop();
    std::vector<std::function<void(hold_state)>> targets;
    {
        std::lock_guard lock(listeners_mutex_);
        for (auto& [id, l] : listeners_)
            if (!l.listening || l.listening()) targets.push_back(l.fn);
    }
    if (targets.empty()) return;
    boost::asio::post(callback_executor(client_.connection()), [targets = std::move(targets), s] {
        for (const auto& fn : targets) fn(s);
    });
}

std::stop_token hold::stop_token() const noexcept {
    stop_wanted_.store(true);
    const auto s = state_.load();
    // Ended before anyone wanted the token: the network thread did not request the stop, so do it
    // here (this is the caller's thread, and the token has no callbacks yet).
    if (s == hold_state::lost || s == hold_state::released || s == hold_state::releasing) stop_.request_stop();
    return stop_.get_token();
}

// The work tied to this hold must stop. Asked on the callback thread: std::stop_callback runs the
// user's function in the thread that requests the stop, and that must never be the network thread.
void hold::request_stop() {
    if (!stop_wanted_.load() || stop_.stop_requested()) return;
    boost::asio::post(callback_executor(client_.connection()), [self = shared_from_this()] { self->stop_.request_stop(); });
}

hold_state hold::caller_state() const noexcept {
    const auto s = state();
    if (s != hold_state::held) return s;
    // The connection's state changes first and the holds follow on the network thread: a caller
    // reading in between must not see held on a connection already suspended or lost (a paused
    // holder of the fault suite read held so, under TSan's slower timing).
    if (!is_connected(client_.state()) || silent_past_receive_timeout(client_.connection())) return hold_state::doubtful;
    return s;
}

void hold::arm(bool own_watch_set) {
    std::weak_ptr<hold> weak = weak_from_this();
    observer_ = add_state_observer(client_.connection(), [weak](connection_state s) {
        if (auto self = weak.lock()) self->on_connection(s);
    });
    // The session may already have changed between the grant and now.
    if (client_.session_id() != session_ || !is_connected(client_.state())) on_connection(client_.state());
    if (own_watch_set) return;
    // Session loss is seen at once through the observer. Deletion by someone else is seen by the
    // watch; most holds of a busy lock are shorter than the delay and never need it.
    own_watch_timer_ = std::make_unique<boost::asio::steady_timer>(network_executor(client_.connection()), own_watch_delay);
    own_watch_timer_->async_wait([weak](error_code ec) {
        auto self = weak.lock();
        if (ec || !self) return;
        const auto s = self->state();
        if (s == hold_state::held || s == hold_state::doubtful) self->watch_own_node();
    });
}

void hold::on_own_node_event(watch_event_type type) {
    const auto s = state();
    if (s == hold_state::releasing || s == hold_state::released || s == hold_state::lost) return;
    if (type == watch_event_type::node_deleted || type == watch_event_type::not_watching) set_state(hold_state::lost);
    else if (type == watch_event_type::node_data_changed && release_passes_on_) {
        // Only our release changes our data; the waiter behind us now holds.
        client_.logger()->error("lock node {} was written by someone else while held; the hold is lost", node_path_);
        set_state(hold_state::lost);
        // The node is still ours: remove it, or it would stay until our session ends.
        client_.async_remove(node_path_, {.guaranteed = true},
                             boost::asio::bind_executor(network_executor(client_.connection()), [](error_code) {}));
    } else watch_own_node();  // data changed: keep watching
}

// A watch on our own node tells us when someone else deletes it. After a reconnection the same
// request re-validates the hold: the node must still exist and belong to our session.
void hold::watch_own_node() {
    const auto gen = ++watch_generation_;
    auto net = network_executor(client_.connection());
    std::weak_ptr<hold> weak = weak_from_this();
    client_.async_exists(
        node_path_,
        boost::asio::bind_executor(net, [weak](watch_event e) {
            if (auto self = weak.lock()) self->on_own_node_event(e.type);
        }),
        boost::asio::bind_executor(net, [weak, gen](error_code ec, std::optional<zkr::stat> st) {
            auto self = weak.lock();
            if (!self || gen != self->watch_generation_) return;
            const auto s = self->state();
            if (s != hold_state::held && s != hold_state::doubtful) return;
            if (!ec && (!st || st->ephemeral_owner != self->session_)) {
                self->set_state(hold_state::lost);
            } else if (!ec && s == hold_state::doubtful && is_connected(self->client_.state()) &&
                       self->client_.session_id() == self->session_ && self->client_.state() != connection_state::read_only) {
                self->set_state(hold_state::held);
            }
        }));
}

void hold::on_connection(connection_state s) {
    const auto st = state();
    switch (s) {
        case connection_state::suspended:
        case connection_state::read_only:
            if (st == hold_state::held) set_state(hold_state::doubtful);
            break;
        case connection_state::connected:
        case connection_state::reconnected:
            if (client_.session_id() != session_) {
                if (st == hold_state::held || st == hold_state::doubtful) set_state(hold_state::lost);
                if (st == hold_state::releasing) finish_release({});  // the node went with the session
                break;
            }
            if (st == hold_state::doubtful) watch_own_node();  // held again only once re-validated
            if (st == hold_state::releasing) try_delete();
            break;
        case connection_state::lost:
        case connection_state::closed:
            if (st == hold_state::held || st == hold_state::doubtful) set_state(hold_state::lost);
            if (st == hold_state::releasing) finish_release(make_error_code(errc::connection_loss));
            break;
        default: break;
    }
}

void hold::begin_release(unique_function<void(const error_code&)> done) {
    const auto st = state();
    if (st == hold_state::released || st == hold_state::releasing) {
        done(make_error_code(errc::lock_not_held));
        return;
    }
    if (st == hold_state::lost) {
        // Nothing to delete on our side (the node went with the session, or someone deleted it);
        // say so, so a holder learns its hold had ended.
        if (observer_) remove_state_observer(client_.connection(), std::exchange(observer_, 0));
        done(make_error_code(errc::lock_lost));
        return;
    }
    release_done_ = std::move(done);
    set_state(hold_state::releasing);
    try_delete();
}

// The hold ends released; a release() still waiting for its outcome hears ec.
void hold::finish_release(const error_code& ec) {
    set_state(hold_state::released);
    if (auto done = std::move(release_done_)) done(ec);
}

// Delete our node; on a connection problem keep the hold in `releasing` and try again on every
// reconnection of the same session (a new session took the node with it). The delete fails fast:
// without a connection the caller hears connection_loss at once instead of waiting for one (a
// guard's destructor must not block through an outage), and the node goes on reconnection.
void hold::try_delete() {
    request r;
    if (signal_release_) {
        // One transaction: the data change tells the waiter behind us that we held (see
        // lock_rule::release_passes_on). The data stays empty: the node is gone with it.
        r.kind = op_kind::multi;
        r.ops = {multi_op::set_data(node_path_, {}), multi_op::remove(node_path_)};
    } else {
        r.kind = op_kind::remove;
        r.path = node_path_;
    }
    r.fail_fast = true;
    // The completion runs on the network thread: the release must finish even if the recipe lets
    // go of this hold, and a release blocks its caller, which may be the callback thread.
    submit(client_.connection(), std::move(r), [self_keep = shared_from_this()](const error_code& ec, response&&) {
        auto& self = *self_keep;
        if (self.state() != hold_state::releasing) return;
        if (!ec || ec == errc::no_node || !is_retryable(ec)) {
            if (ec && ec != errc::no_node) self.client_.logger()->error("release of {} failed: {}", self.node_path_, ec.message());
            self.finish_release(ec == errc::no_node ? error_code{} : ec);
            return;
        }
        self.client_.logger()->warn("release of {} pending: {}; the node is deleted once the connection returns",
                                    self.node_path_, ec.message());
        if (auto done = std::move(self.release_done_)) done(ec);
        // Keep this hold alive (the recipe has let go of it) and retry on every reconnection
        // until the node is gone.
        auto& conn = self.client_.connection();
        if (self.observer_) remove_state_observer(conn, self.observer_);
        self.observer_ = add_state_observer(conn, [self_keep](connection_state s) { self_keep->on_connection(s); });
    });
}

std::vector<multi_result> hold::guarded_multi(std::vector<multi_op> ops, error_code& ec) {
    const auto s = caller_state();
    if (s != hold_state::held) {
        ec = make_error_code(s == hold_state::lost ? errc::lock_lost : errc::lock_not_held);
        return {};
    }
    ops.insert(ops.begin(), multi_op::check(node_path_));
    request r;
    r.kind = op_kind::multi;
    r.ops = std::move(ops);
    r.required_session = session_;
    response out;
    ec = run_sync(client_.connection(), std::move(r), out).ec;
    if (!out.results.empty()) out.results.erase(out.results.begin());
    if (ec == errc::no_node || ec == errc::session_expired) ec = make_error_code(errc::lock_lost);
    return std::move(out.results);
}

// ---------------------------------------------------------------------------------------------
// acquisition: one attempt to hold, driven by replies on the network thread.

struct acquisition : std::enable_shared_from_this<acquisition> {
    std::shared_ptr<lock_driver> driver;
    zkr::client& client;
    boost::asio::any_io_executor net;
    std::optional<clock::time_point> deadline;
    bool try_only = false;
    std::string data;
    std::string create_name;  // the node name before the protect prefix and the sequence
    acquire_handler done;
    std::function<void(const std::string&)> on_queued;
    std::function<void()> on_waiting;

    bool finished = false;
    std::uint64_t generation = 0;  // bumped on restart: replies of an older attempt are ignored
    bool created = false;
    std::string node_path, node_name;
    zkr::stat node_stat;
    std::optional<std::vector<std::string>> early_listing;  // a listing that came before our create's reply
    bool list_pending = false;  // a listing is in flight
    queue_view view;
    std::set<std::string> watching;   // nodes whose watch is set in this generation
    std::set<std::string> signalled;  // waiters ahead whose grant we already acted on
    std::unique_ptr<boost::asio::steady_timer> timer;
    std::uint64_t observer = 0;
    int restarts = 0;
    // Once we waited, a waiter behind us may have listed nodes ahead of ours: our release then
    // tells it that we held (see hold's signal_release).
    bool waited = false;
    // The watch on our own node, set once we have waited hold::own_watch_delay: it tells a waiter
    // that its node was deleted, and passes to the hold on grant (so a grant needs no new request).
    struct own_watch {
        std::weak_ptr<acquisition> waiter;
        std::weak_ptr<hold> holder;
        std::uint64_t generation = 0;
    };
    std::shared_ptr<own_watch> own;
    std::unique_ptr<boost::asio::steady_timer> own_timer;  // sets `own` once we waited a while

    acquisition(std::shared_ptr<lock_driver> d, boost::asio::any_io_executor n)
        : driver(std::move(d)), client(driver->get_client()), net(std::move(n)) {}

    // Whatever let go of the last reference (a closed handle drops its watches, and with them the
    // waiter they kept alive), the caller is answered: a waiter never waits forever.
    ~acquisition() {
        if (auto d = std::move(done)) d(make_error_code(errc::closed), nullptr);
    }

    std::string lock_node_prefix() const { return join_path(driver->path(), create_name); }

    void start() {
        // A try answers at once: with no connection to try on there is nothing to wait for.
        if (try_only && !is_connected(client.state())) return fail(make_error_code(errc::not_connected));
        if (deadline) {
            timer = std::make_unique<boost::asio::steady_timer>(net, *deadline);
            timer->async_wait([self = shared_from_this()](error_code ec) {
                if (!ec) self->on_timeout();
            });
        }
        std::weak_ptr<acquisition> weak = weak_from_this();
        observer = add_state_observer(client.connection(), [weak](connection_state s) {
            if (auto self = weak.lock()) self->on_connection(s);
        });
        create_and_list();
    }

    // One round trip: the create and the listing are sent back to back; the server applies them
    // in order, so the listing already contains our node.
    void create_and_list() {
        const auto gen = generation;
        created = false;
        early_listing.reset();
        client.async_create(lock_node_prefix(), data,
                            {.mode = create_mode::ephemeral_sequential, .create_parents = true, .protect = true},
                            boost::asio::bind_executor(net, [self = shared_from_this(), gen](error_code ec, create_result r) {
                                if (gen == self->generation) self->on_created(ec, std::move(r));
                                else if (!ec) self->remove_node(r.path);  // an abandoned attempt's node
                            }));
        list(/*fresh=*/false);
    }

    void list(bool fresh) {
        const auto gen = generation;
        list_pending = true;
        client.async_get_children(driver->path(), boost::asio::bind_executor(net, [self = shared_from_this(), gen, fresh](
                                                                                 error_code ec, children_result r) {
            if (gen != self->generation) return;
            self->list_pending = false;
            self->on_listed(ec, std::move(r.children), fresh);
        }));
    }

    void on_created(const error_code& ec, create_result r) {
        if (finished) {
            if (!ec) remove_node(r.path);  // timed out or cancelled while the create was in flight
            return;
        }
        if (ec) return fail(ec);
        created = true;
        node_path = std::move(r.path);
        node_name = std::string(zkr::node_name(node_path));
        node_stat = r.stat;
        if (on_queued) on_queued(node_path);
        if (early_listing) {
            auto listing = std::move(*early_listing);
            early_listing.reset();
            evaluate(std::move(listing), /*fresh=*/false);
        } else if (!list_pending) {
            list(true);  // the pipelined listing failed (no parent yet) before the create was retried
        }
    }

    void on_listed(const error_code& ec, std::vector<std::string> children, bool fresh) {
        if (finished) return;
        if (ec && ec != errc::no_node) return fail(ec);
        if (!created) {
            // Replies come in order, so this only happens when the create was retried: keep the
            // listing and look at it once the create is done.
            if (!ec) early_listing = std::move(children);
            return;
        }
        if (ec) return list(true);
        evaluate(std::move(children), fresh);
    }

    void evaluate(std::vector<std::string> children, bool fresh) {
        if (!view.reset(sorted_participants(children, driver->lock_name()), node_name)) {
            if (!fresh) return list(true);  // listed before our create landed (retried create)
            return node_vanished();
        }
        decide();
    }

    void decide() {
        const auto d = view.decide(driver->rule());
        if (d.error) return fail(d.error);
        if (d.holds) return grant();
        if (try_only) return give_up();
        waited = true;
        if (on_waiting) on_waiting();
        if (!own && !own_timer) watch_own_node_later();
        for (const auto& name : d.watch)
            if (watching.insert(name).second) watch(name, d.await_grant);
    }

    // The rule's limit changed (a shared count): decide again from what we know.
    void reevaluate() {
        if (finished || !created || view.nodes().empty()) return;
        decide();
    }

    // A waiter sets the watch on its own node once it has waited hold::own_watch_delay, as a hold
    // does: most waits of a busy lock are shorter, and that request was one in five of a contended
    // cycle (A/B: W2 3,841 -> 4,184 cycles/s, docs/performance.md). A waiter granted before
    // then passes no watch to its hold, which sets its own after the same delay.
    void watch_own_node_later() {
        own_timer = std::make_unique<boost::asio::steady_timer>(net, hold::own_watch_delay);
        own_timer->async_wait([self = shared_from_this(), gen = generation](error_code ec) {
            if (ec || self->finished || gen != self->generation || self->own) return;
            self->watch_own_node();
        });
    }

    void watch_own_node() {
        own = std::make_shared<own_watch>();
        own->waiter = weak_from_this();
        own->generation = generation;
        client.async_exists(
            node_path,
            boost::asio::bind_executor(net, [o = own](watch_event e) {
                if (auto h = o->holder.lock()) return h->on_own_node_event(e.type);
                auto self = o->waiter.lock();
                if (!self || self->finished || o->generation != self->generation) return;
                if (e.type == watch_event_type::node_deleted) self->node_vanished();
                else if (e.type != watch_event_type::not_watching) self->watch_own_node();
            }),
            boost::asio::bind_executor(net, [o = own](error_code ec, std::optional<zkr::stat> st) {
                if (auto h = o->holder.lock()) {
                    if (!ec && (!st || st->ephemeral_owner != h->session_id())) h->on_own_node_event(watch_event_type::node_deleted);
                    return;
                }
                auto self = o->waiter.lock();
                if (!self || self->finished || o->generation != self->generation) return;
                if (!ec && !st) self->node_vanished();
            }));
    }

    // Watch only the nodes the rule names. getData, not exists, so that no watch is left behind
    // on a node that is already gone. A waiter ahead of us that we await (await_grant) signals
    // its grant by touching its node: a data change, or a version above 0 when we come too late
    // for the change. We then list once to learn which holders to watch.
    void watch(const std::string& name, bool await_grant) {
        const auto gen = generation;
        const std::string path = join_path(driver->path(), name);
        client.async_get_data(
            path,
            boost::asio::bind_executor(net, [self = shared_from_this(), gen, name, await_grant](watch_event e) {
                if (self->finished || gen != self->generation) return;
                self->watching.erase(name);
                if (e.type == watch_event_type::node_deleted) {
                    self->on_node_gone(name);
                } else if (e.type == watch_event_type::node_data_changed && self->driver->rule().release_passes_on()) {
                    self->on_released_after_holding(name);
                } else if (e.type != watch_event_type::not_watching) {
                    if (await_grant && self->signalled.insert(name).second) return self->list(true);
                    self->watching.insert(name);
                    self->watch(name, await_grant);
                }
            }),
            boost::asio::bind_executor(net, [self = shared_from_this(), gen, name, await_grant](error_code ec, data_result r) {
                if (self->finished || gen != self->generation) return;
                if (ec == errc::no_node) {
                    self->watching.erase(name);
                    self->on_node_gone(name);
                } else if (ec) {
                    self->fail(ec);
                } else if (await_grant && r.stat.version > 0 && self->signalled.insert(name).second) {
                    self->list(true);  // it was granted before our watch was set
                }
            }));
    }

    // A node ahead of ours is gone. The view is a superset of the nodes really ahead, so when it
    // says we hold, we do: granted with no request. When we already watch every node the rule
    // names (the first waiter watching its holders), we wait on. Otherwise the other nodes the
    // view still lists are most likely gone too (they held and released): list once rather than
    // check them one by one.
    void on_node_gone(const std::string& name) {
        view.remove(name);
        const auto d = view.decide(driver->rule());
        if (d.error) return fail(d.error);
        if (d.holds) return grant();
        const bool all_watched =
            std::all_of(d.watch.begin(), d.watch.end(), [this](const std::string& n) { return watching.count(n) > 0; });
        if (all_watched) return;
        list(true);
    }

    // The node ahead of ours held and released in one transaction with a data change (a
    // one-holder lock): everything up to it is gone, and we hold, with no request.
    void on_released_after_holding(const std::string& name) {
        view.remove_through(name);
        for (auto it = watching.begin(); it != watching.end();)
            it = view_has(*it) ? std::next(it) : watching.erase(it);
        decide();
    }

    bool view_has(const std::string& name) const {
        return std::find(view.nodes().begin(), view.nodes().end(), name) != view.nodes().end();
    }

    void node_vanished() {
        // Our node was deleted while we waited (by hand, or with an old session): queue again.
        if (++restarts > 100) return fail(make_error_code(errc::no_node));
        client.logger()->warn("lock node {} vanished while waiting; queueing again", node_path);
        restart();
    }

    void restart() {
        ++generation;
        view = {};
        watching.clear();
        signalled.clear();
        own.reset();
        if (own_timer) own_timer->cancel();
        own_timer.reset();
        create_and_list();
    }

    void on_connection(connection_state s) {
        if (finished) return;
        if (s == connection_state::closed) return fail(make_error_code(errc::closed));
        // A try does not wait through an outage (its node, if any, goes on reconnection).
        if (try_only && !is_connected(s)) return fail(make_error_code(errc::connection_loss));
        // A new session: our node belonged to the old one. Remove it (it may outlive us until the
        // server expires the old session) and queue again on the new session.
        if ((s == connection_state::reconnected || s == connection_state::connected) && created &&
            client.session_id() != node_stat.ephemeral_owner) {
            remove_node(node_path);
            restart();
        }
    }

    void grant() {
        // CURATOR-604: a node of an earlier session never counts as ours.
        if (node_stat.ephemeral_owner != client.session_id()) {
            remove_node(node_path);
            return restart();
        }
        auto h = std::make_shared<hold>(client, node_path, node_stat.czxid, node_stat.ephemeral_owner,
                                        driver->rule().release_passes_on(), /*signal_release=*/waited);
        // With holders still ahead of us, the waiter behind us (watching only us) becomes the
        // first waiter and must watch them all: tell it by touching our node. Sent before our own
        // exists watch, so that it does not fire that watch.
        if (view.ahead() > 0) {
            client.async_set_data(node_path, data, -1, boost::asio::bind_executor(net, [logger = client.logger(), p = node_path](error_code ec, zkr::stat) {
                                      if (ec) logger->debug("signalling the grant of {}: {}", p, ec.message());
                                  }));
        }
        const bool watched = static_cast<bool>(own);
        if (own) own->holder = h;
        h->arm(watched);
        complete({}, std::move(h));
    }

    void give_up() {
        remove_node(node_path);
        complete({}, nullptr);
    }

    void on_timeout() {
        if (finished) return;
        // "Not acquired in time" would claim someone else holds it. Without a connection and with
        // no node queued, we never found out: say so.
        if (!created && !is_connected(client.state())) return fail(make_error_code(errc::not_connected));
        if (created) remove_node(node_path);  // if the create is in flight, on_created removes it
        complete({}, nullptr);
    }

    void fail(const error_code& ec) {
        if (finished) return;
        if (created) remove_node(node_path);
        complete(ec, nullptr);
    }

    void complete(const error_code& ec, std::shared_ptr<hold> h) {
        finished = true;
        if (timer) timer->cancel();
        if (own_timer) own_timer->cancel();
        if (observer) remove_state_observer(client.connection(), std::exchange(observer, 0));
        if (auto d = std::move(done)) d(ec, std::move(h));
    }

    // Our node goes on timeout, cancel, error and try_lock; guaranteed: a connection problem does
    // not leave it behind.
    void remove_node(const std::string& path) {
        client.async_remove(path, {.guaranteed = true}, boost::asio::bind_executor(net, [logger = client.logger(), path](error_code ec) {
                                if (ec && ec != errc::no_node) logger->warn("removing lock node {}: {}", path, ec.message());
                            }));
    }
};

// ---------------------------------------------------------------------------------------------
// lock_driver

lock_driver::lock_driver(zkr::client& c, std::string lock_path, std::string lock_name, std::shared_ptr<const lock_rule> rule)
    : client_(c), path_(std::move(lock_path)), lock_name_(std::move(lock_name)), rule_(std::move(rule)) {
    check_lock_path(path_);
}

void lock_driver::acquire(std::optional<std::chrono::milliseconds> timeout, std::string data, acquire_handler done,
                          std::function<void(const std::string&)> on_queued) {
    acquire(acquire_request{timeout, std::move(data), {}, std::move(on_queued)}, std::move(done));
}

void lock_driver::acquire(acquire_request req, acquire_handler done) {
    auto net = network_executor(client_.connection());
    auto a = std::make_shared<acquisition>(shared_from_this(), net);
    if (req.timeout && req.timeout->count() <= 0) a->try_only = true;
    else if (req.timeout) a->deadline = clock::now() + *req.timeout;
    a->data = std::move(req.data);
    a->create_name = req.node_name.empty() ? lock_name_ : std::move(req.node_name);
    a->done = std::move(done);
    a->on_queued = std::move(req.on_queued);
    a->on_waiting = std::move(req.on_waiting);
    {
        std::lock_guard lock(pending_mutex_);
        std::erase_if(pending_, [](const auto& w) { return w.expired(); });
        pending_.push_back(a);
    }
    if (client_.state() == connection_state::closed || !is_started(client_.connection())) {
        // The network thread is gone, or has not run yet (start() was never called; its timers
        // would never fire): complete here, on the caller's thread, as a plain operation would.
        auto d = std::move(a->done);
        d(make_error_code(client_.state() == connection_state::closed ? errc::closed : errc::not_connected), nullptr);
        return;
    }
    boost::asio::dispatch(net, [a] { a->start(); });
}

std::shared_ptr<hold> lock_driver::acquire_sync(std::optional<std::chrono::milliseconds> timeout, std::string data,
                                                error_code& ec, std::function<void(const std::string&)> on_queued) {
    return acquire_sync(acquire_request{timeout, std::move(data), {}, std::move(on_queued)}, ec);
}

std::shared_ptr<hold> lock_driver::acquire_sync(acquire_request req, error_code& ec) {
    auto result = std::make_shared<sync_result<std::pair<error_code, std::shared_ptr<hold>>>>();
    // Waiting behind a holder lasts as long as the holder likes: no point spinning through it.
    req.on_waiting = [result, chained = std::move(req.on_waiting)] {
        result->stop_spinning();
        if (chained) chained();
    };
    acquire(std::move(req), [result](const error_code& e, std::shared_ptr<hold> h) { result->set({e, std::move(h)}); });
    auto [e, h] = result->get(client_.options().blocking_call_spin);
    ec = e;
    return h;
}

void lock_driver::reevaluate() {
    std::vector<std::shared_ptr<acquisition>> live;
    {
        std::lock_guard lock(pending_mutex_);
        for (auto& w : pending_)
            if (auto a = w.lock()) live.push_back(std::move(a));
    }
    if (live.empty() || client_.state() == connection_state::closed) return;
    boost::asio::dispatch(network_executor(client_.connection()), [live = std::move(live)] {
        for (const auto& a : live) a->reevaluate();
    });
}

error_code lock_driver::release_sync(const std::shared_ptr<hold>& h) {
    // Wait for the delete's outcome: when release() returns, the lock is free for everyone, as a
    // user of std::mutex expects (another process's try_lock then succeeds). Returning once the
    // delete is queued would save a round trip per cycle but break that expectation; callers who
    // want that trade use the async form (interprocess_mutex::async_release). docs/performance.md.
    auto result = std::make_shared<sync_result<error_code>>();
    release(h, [result](const error_code& ec) { result->set(ec); });
    return result->get(client_.options().blocking_call_spin);
}

void lock_driver::release(const std::shared_ptr<hold>& h, unique_function<void(const error_code&)> done) {
    if (client_.state() == connection_state::closed) {
        done(make_error_code(h->state() == hold_state::lost ? errc::lock_lost : errc::closed));
        return;
    }
    boost::asio::dispatch(network_executor(client_.connection()),
                          [h, done = std::move(done)]() mutable { h->begin_release(std::move(done)); });
}

void lock_driver::cancel() {
    std::vector<std::shared_ptr<acquisition>> live;
    {
        std::lock_guard lock(pending_mutex_);
        for (auto& w : pending_)
            if (auto a = w.lock()) live.push_back(std::move(a));
        pending_.clear();
    }
    if (live.empty() || client_.state() == connection_state::closed) return;
    boost::asio::dispatch(network_executor(client_.connection()), [live = std::move(live)] {
        for (const auto& a : live) a->fail(make_error_code(errc::cancelled));
    });
}

std::string lock_driver::acquire_failure(const error_code& ec, std::string_view what) const {
    if (ec == errc::not_connected && !is_started(client_.connection()))
        return "the client was never started: call client::start() before acquiring";
    return ec.message() + " while acquiring " + std::string(what);
}

std::vector<std::string> lock_driver::participants(error_code& ec) {
    auto r = client_.get_children(path_, ec);
    if (ec == errc::no_node) {
        ec = {};
        return {};
    }
    std::vector<std::string> out;
    for (auto& name : sorted_participants(r.children, lock_name_)) out.push_back(join_path(path_, name));
    return out;
}

}  // namespace detail
}  // namespace zkr
