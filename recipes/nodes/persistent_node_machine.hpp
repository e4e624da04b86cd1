// The decisions of a persistent node, as a value: events in, actions out, on zk_ops. It keeps one
// node in existence while it is open, whatever happens to it: made again after anyone deletes it
// and after its session ends (an ephemeral node), and holding the latest data it was given.
//
// One exists watch on the node is the whole of its attention. Every reconnection reads the node
// again, so a deletion or a lost write while the connection was away is seen then. A node at its
// path that an ephemeral mode finds owned by another process's session is not adopted: the watch
// waits for it to go, as does one an earlier session of this client left (a session the client
// gave up as lost while the server kept it: a server restarted, or unreachable, past the session
// timeout): ZooKeeper cannot delete a node only if a given session owns it. A close reads a plain
// path it does not know to be ours (a create's reply lost, an earlier session's node), deletes
// what is ours, waits out an earlier session's node, and ends only then.
// A create whose reply was lost is left to the client: a protected create finds its own node, or
// the client removes it once it gives up (src/protected_create.hpp); an unprotected one made again
// meets node_exists (adopted: our session's) or, sequential, leaves an extra node until the session
// ends, as Curator's does. Sequential modes make a new name at each incarnation. A TTL node is
// touched (its data written again) every half TTL while it exists, so that the server, which
// removes a TTL node left unmodified for its TTL, keeps it (Curator's PersistentTtlNode touches a
// child for the same end).
#pragma once

#include "../core/zk_ops.hpp"

#include <chrono>
#include <string>
#include <variant>
#include <vector>

namespace zkr::detail {

namespace node_in {
/// The node is wanted from now on; session: the client's session now (0 when it has none).
struct start {
    std::int64_t session = 0;
};
/// New data for the node, and for its later incarnations.
struct set_data {
    std::string data;
};
/// The node is not wanted any more: it is deleted, and never made again.
struct close {};
}  // namespace node_in

namespace node_out {
/// The node's path changed: made (again) under a new name, or gone (empty).
struct path_changed {
    std::string path;
};
/// Another session's ephemeral node is at the path: it is waited out, not taken over.
struct taken {
    std::string path;
    std::int64_t owner = 0;
    bool earlier_session = false;  ///< the owner is a session this client had before
};
/// The node exists for the first time (once).
struct first_created {};
/// A create failed in a way another try cannot mend (no permission, missing parents without
/// parent creation, a TTL the server does not allow): the machine stops trying.
struct gave_up {
    boost::system::error_code ec;
};
/// After close: the node is deleted, or known gone (ec: why the delete failed, if it did).
struct closed {
    boost::system::error_code ec;
};
}  // namespace node_out

struct persistent_node_config {
    std::string path;
    create_mode mode = create_mode::ephemeral;
    bool protect = false;
    bool create_parents = true;
    std::chrono::milliseconds ttl{0};
    std::chrono::milliseconds retry_delay{1000};  ///< after a failure that is neither the connection's nor final
};

class persistent_node_machine {
public:
    using input = std::variant<node_in::start, node_in::set_data, node_in::close, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, node_out::path_changed, node_out::taken, node_out::first_created, node_out::gave_up, node_out::closed>;

    persistent_node_machine(persistent_node_config config, std::string data) : config_(std::move(config)), data_(std::move(data)) {}

    std::vector<action> resume(const input& e);

    /// The node's path while it exists as ours, else empty.
    const std::string& current_path() const noexcept { return path_; }
    const std::string& data() const noexcept { return data_; }
    bool closed() const noexcept { return phase_ == phase::done; }
    /// The TTL touch's timer, while one runs (0 otherwise): it runs for as long as the node lives.
    zk::ticket touch_timer() const noexcept { return touch_; }

private:
    enum class phase { idle, running, closing, stopped, done };

    void on(const node_in::start& s);
    void on(const node_in::set_data& s);
    void on(const node_in::close&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due& t);
    void on(const zk::connection_changed& c);

    void created(const zk::reply& r);
    void checked(const zk::reply& r);
    void checked_while_closing(const zk::reply& r);
    void written(const zk::reply& r);
    void removed(const zk::reply& r);

    void create();
    void check(const std::string& path);
    void write();
    void remove();
    void close_next();
    void read_doomed_again();
    void retry_later();
    void after_failure(const boost::system::error_code& ec);
    void carry_on();  // whatever the node needs next, after a reconnection or a retry
    void client_closed();
    void set_path(std::string path);
    void arm_touch();
    void finish_close(boost::system::error_code ec = {});
    bool ours(const zkr::stat& st) const;
    bool left_by_earlier_session(const zkr::stat& st) const;
    void session_ended();

    zk::ticket next() { return ++last_ticket_; }

    persistent_node_config config_;
    std::string data_;
    std::vector<action>* out_ = nullptr;
    phase phase_ = phase::idle;
    std::int64_t session_ = 0;
    bool connected_ = true;     // (as far as the machine has heard; requests queue meanwhile)
    std::string path_;          // our node, while it exists as ours
    std::string watched_;       // the path the newest exists watches
    std::vector<std::int64_t> earlier_sessions_;  // this client's, newest last (a few: they expire)
    std::string doomed_;        // the node close deletes
    std::int32_t doomed_version_ = -1;  // at this version (-1 but for a node read as ours while closing)
    std::string suspect_;       // while closing: a node that may be ours, to read before finishing
    bool reading_ = false;      // check_'s reply is still to come
    bool waiting_out_ = false;  // while closing: check_ watches an earlier session's node
    bool data_written_ = false; // the node holds data_
    bool first_done_ = false;
    zk::ticket last_ticket_ = 0;
    zk::ticket create_ = 0, check_ = 0, write_ = 0, remove_ = 0, retry_ = 0, touch_ = 0;
    std::string created_with_, writing_;
};

}  // namespace zkr::detail
