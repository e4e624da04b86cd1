// zkr::persistent_node: a node kept in existence while the object lives (Curator's PersistentNode).
#pragma once

#include <zkr/client.hpp>
#include <zkr/create_options.hpp>
#include <zkr/subscription.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace zkr {

/// How a persistent_node makes its node.
struct persistent_node_options {
    /// A protected name ("_c_<uuid>-" before the node's name): after a create whose reply was
    /// lost, the client finds its node instead of making a second one. Use it with the
    /// sequential modes, where a second node would have a name of its own.
    bool use_protection = false;
    /// Missing parents are made as containers; without, a missing parent ends the attempts (the
    /// error comes from wait_for_initial_create).
    bool create_parents = true;
    /// For the *_with_ttl modes: positive there, zero elsewhere. The server must allow TTL nodes
    /// (zookeeper.extendedTypesEnabled=true).
    std::chrono::milliseconds ttl{0};
};

/**
 * A node that exists while this object is started and not closed, with the data last given to it.
 * Its node is made at start(), and made again (with the latest data) when anyone deletes it and,
 * for the ephemeral modes, after the session ends. A sequential mode's node gets a new name at
 * each incarnation: current_path() and the path listeners say which.
 *
 * Connection loss: the node stays as it is (an ephemeral node lives as long as its session);
 * every reconnection reads it again, and makes it again if it went meanwhile.
 * Session expiry: an ephemeral node went with the session; the new session makes it again, so it
 * is missing for at most the time to notice the expiry plus one round trip. Until then
 * current_path() is empty.
 *
 * An ephemeral node at the path owned by another session (another process's node, or one of this
 * client's earlier session, which the client gave up as lost while the server kept it: a server
 * restarted past the session timeout) is not taken over: this object waits for it to go, then
 * makes its own. (A set_data racing such a replacement of the node can still land in the other
 * node: ZooKeeper has no write conditional on a node's owner.)
 *
 * Thread safety: every member may be called from any thread; listeners run on the client's
 * callback thread.
 */
class persistent_node {
public:
    /// Checks the arguments (zkr::error, nothing sent): a valid path, data within the server's
    /// limit, a TTL with exactly the *_with_ttl modes. Nothing is made before start().
    persistent_node(client& c, std::string path, create_mode mode, std::string data, persistent_node_options options = {});
    /// Closes (see close(), with its default timeout); never throws.
    ~persistent_node();
    persistent_node(const persistent_node&) = delete;
    persistent_node& operator=(const persistent_node&) = delete;

    /// Makes the node and keeps it from now on (once; later calls do nothing).
    void start();
    /// Deletes the node and stops keeping it, waiting until it is deleted or `timeout` passes
    /// (the deletion goes on past it, on the next reconnection). Later calls do nothing.
    /// Returns true when the node is known gone: a plain path whose node it does not know (a create
    /// whose reply was lost) is read first, and a node of an earlier session of the client that
    /// the server still keeps is waited for until the server ends that session. It deletes only
    /// what it knows to be its own. Without a connection it waits up to `timeout` and returns
    /// false, as it cannot know. After the client was closed it returns at once: an ephemeral
    /// node went with the session (true), a persistent one stays (false).
    bool close(std::chrono::milliseconds timeout = std::chrono::seconds(10));
    /// Waits until the node exists for the first time; false on timeout. Throws zkr::error if the
    /// node cannot be made (no permission, a missing parent without create_parents, TTL nodes
    /// not allowed by the server), saying why.
    bool wait_for_initial_create(std::chrono::milliseconds timeout);
    /// The node's path while it exists as this object's, else empty.
    std::string current_path() const;
    /// New data for the node now (if it exists) and for its later incarnations.
    void set_data(std::string data);
    /// The data last given.
    std::string data() const;
    /// listener(path) runs on the callback thread each time the node's path changes: made (its
    /// path) or gone (empty).
    state_subscription add_path_listener(std::function<void(const std::string&)> listener);
    /// The path given (a sequential node's names start with it).
    const std::string& path() const noexcept { return path_; }

private:
    struct state;
    client& client_;
    std::string path_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
