/// @file
/// zkr::service_discovery: service instances registered and found in curator-x-discovery's layout
/// and JSON, so that C++ services and Java services using Curator see each other.
#pragma once

#include <zkr/client.hpp>
#include <zkr/service_cache.hpp>
#include <zkr/service_instance.hpp>
#include <zkr/service_provider.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zkr {

class persistent_node;

/// How a service_discovery waits.
struct service_discovery_options {
    /// The most register_service waits for an instance's node, and unregister_service and close()
    /// for its deletion.
    std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

/**
 * Registers this process's service instances under a base path and finds any process's, in
 * curator-x-discovery's layout (`<base>/<name>/<id>`, parents made as containers) and JSON
 * (service_instance_to_json). For a cached view of one service use service_cache, for one
 * instance at a time service_provider.
 *
 * A registered instance's node is kept by a persistent_node (dynamic, dynamic_sequential,
 * static_): made again when anyone deletes it and, for the dynamic types, on the new session after
 * a session loss, with the latest data. (Curator's deletes and re-makes every instance on every
 * reconnection, which watchers see as a departure; zkr's stays put while its session lives.)
 * A permanent instance is made once and left alone until unregister_service.
 *
 * Connection loss: nothing changes; registrations stand (an ephemeral node lives as long as its
 * session); queries fail with the connection error. Session expiry: the dynamic instances are
 * missing until the new session makes them again (the time to notice the expiry plus a round
 * trip).
 *
 * An instance's node owned by another session (the same id registered by another process, or by
 * this process's previous session that the server has not removed yet) is not taken over:
 * register_service waits for it to go, up to the timeout.
 *
 * Thread safety: every member may be called from any thread.
 */
class service_discovery {
  public:
    /// Throws zkr::error (invalid_path, nothing sent) on a bad base path.
    service_discovery(client& c, std::string base_path, service_discovery_options options = {});
    /// close(); never throws.
    ~service_discovery();
    service_discovery(const service_discovery&) = delete;
    service_discovery& operator=(const service_discovery&) = delete;

    /// Registers the instance and waits until its node exists. An empty id becomes a random UUID
    /// and a zero registration time now; returns the instance as written. Throws zkr::error, the
    /// instance then not registered (nothing left behind): invalid_argument (nothing sent) for a
    /// name or id that is not one node name, bad JSON in the payload, data over the server's limit,
    /// an id this object has registered already; operation_timeout when the node was not made
    /// within the timeout; the server's error (no_auth, ...) otherwise.
    service_instance register_service(service_instance instance);
    /// New fields for an instance this object registered (same name, id and type): its node's data
    /// now, and on every later incarnation. Throws zkr::error (invalid_argument) for an instance
    /// not registered here or bad fields; for a permanent instance, the write's error.
    void update_service(service_instance instance);
    /// Deletes the instance's node (registered here or not, by name and id) and stops keeping it,
    /// waiting at most the timeout (the deletion of a kept node goes on past it). Returns true
    /// when the node is known gone. Never throws.
    bool unregister_service(const service_instance& instance) noexcept;
    /// The services' names: the base path's children, sorted (none when it does not exist).
    /// Throws zkr::error on a failed read.
    std::vector<std::string> query_for_names();
    /// The instances of a service, read now (pipelined), sorted by node name. A node whose data is
    /// not an instance is left out, with a warning in the client's log. Throws zkr::error on a
    /// failed read, or (invalid_argument) a name that is not one node name.
    std::vector<service_instance> query_for_instances(const std::string& name);
    /// The instance at `<base>/<name>/<id>`, read now; nullopt when there is none (or its data is
    /// not an instance: logged). A dynamic_sequential instance's node name is not its id: find it
    /// with query_for_instances.
    std::optional<service_instance> query_for_instance(const std::string& name,
                                                       const std::string& id);
    /// The instances this object has registered, as last given.
    std::vector<service_instance> registered() const;
    /// Unregisters every instance registered here except the permanent ones, which stay; later
    /// registrations are refused (closed). Never throws.
    void close() noexcept;
    /// The base path.
    const std::string& base_path() const noexcept { return base_path_; }

  private:
    struct registration;
    using key = std::pair<std::string, std::string>;  // name, id
    client& client_;
    std::string base_path_;
    service_discovery_options options_;
    mutable std::mutex mutex_;
    bool closed_ = false;
    std::map<key, std::shared_ptr<registration>> registered_;
};

}  // namespace zkr
