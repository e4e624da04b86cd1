/// @file
/// zkr::service_cache: one service's instances kept in memory (curator-x-discovery's ServiceCache).
#pragma once

#include <zkr/children_cache.hpp>
#include <zkr/client.hpp>
#include <zkr/service_instance.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zkr {

/**
 * The instances of one service, `<base>/<name>`'s children read into service_instance values by a
 * children_cache, so that looking them up asks no server. Instances registered by zkr and by
 * Curator's ServiceDiscovery alike. A node whose data is not an instance (not Curator's JSON) is
 * left out, with a warning in the client's log once per version of it.
 *
 * The service node need not exist: the cache waits for it (and never makes it).
 * Connection loss: instances() shows what was last read; the cache reads again on reconnection.
 * Session expiry: the same, on the new session; instances of ended sessions disappear as the
 * server removes their nodes.
 *
 * Thread safety: every member may be called from any thread; listeners run on the client's
 * callback thread.
 */
class service_cache {
  public:
    /// Checks the arguments (zkr::error, nothing sent): a valid base path, a name that is one node
    /// name.
    service_cache(client& c, const std::string& base_path, const std::string& name);
    /// Stops reading (never throws).
    ~service_cache();
    service_cache(const service_cache&) = delete;
    service_cache& operator=(const service_cache&) = delete;

    /// Begins reading (once). Throws zkr::error (invalid_argument) if started before, or closed.
    void start();
    /// Stops reading; a second close does nothing (never throws).
    void close() noexcept;
    /// Waits until the instances have been read once after start(); false on timeout.
    bool wait_initialized(std::chrono::milliseconds timeout) const;
    /// The instances as last read, sorted by node name (the id, for the non-sequential types).
    std::vector<service_instance> instances() const;
    /// listener() runs on the callback thread after each change of the instances (one added,
    /// updated or removed); instances() then shows it. Throws zkr::error if empty.
    state_subscription add_listener(std::function<void()> listener);
    /// The service's name.
    const std::string& name() const noexcept { return name_; }

  private:
    friend class service_provider;
    struct parsed;
    /// The instances as last read, shared: rebuilt only after the view changed.
    std::shared_ptr<const std::vector<service_instance>> snapshot() const;
    std::string name_;
    children_cache nodes_;
    std::shared_ptr<parsed> parsed_;
    state_subscription changes_;  // marks the snapshot stale
};

}  // namespace zkr
