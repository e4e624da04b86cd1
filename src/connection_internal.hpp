// What the connection's files share: the records of an operation and of a request in flight.
// Private to src/.
#pragma once

#include "client_hooks.hpp"
#include "connection.hpp"
#include "observe.hpp"
#include "protected_create.hpp"
#include "zk_convert.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

namespace zkr::detail {

using clock = std::chrono::steady_clock;

// An operation and its retry state; lives until its completion ran.
struct operation {
    request req;
    completion done;
    bool checked = false;  // check_request passed already (a sync call checks on its caller's thread)
    int retries = 0;
    clock::time_point started = clock::now();
    std::string path;            // full path (namespace applied), when the client has a namespace: zk_path()
    protected_create protection;  // a protected create's prefix and recovery
    int parent_attempts = 0;
    int parent_error = 0;  // the first definite failure creating a parent (e.g. its parent is ephemeral)
    std::shared_ptr<watch_registry::watch> watch;
    std::unique_ptr<boost::asio::steady_timer> timer;

    /// The path as sent to ZooKeeper: the request's own without a namespace (no copy made).
    const std::string& zk_path() const noexcept { return path.empty() ? req.path : path; }
};

// One request sent through the C client; owned by the connection's request_depot until its C
// callback runs or the handle is closed. "abandoned": its outcome was already decided (connection lost).
struct inflight {
    connection* conn = nullptr;
    std::shared_ptr<operation> op;  // null for fire-and-forget requests (parent creates, guaranteed deletes)
    enum class step { main, protected_list, protected_exists, orphan_list } what = step::main;
    bool abandoned = false;
    watch_registry::entry* watch = nullptr;
    acl_storage acl;
    multi_storage multi;
    std::string child;  // protected_exists: the found child's full path; orphan_list: the prefix
    std::string path;   // guaranteed delete: the path; orphan_list: the parent
    std::weak_ptr<operation> parent_of;  // parent create: the create it makes way for

    /// Blank again, for the next request (a field added above is reset here too): what it held
    /// goes now, as it went when records were deleted, and a part it never used costs nothing.
    /// (Assigning a whole blank record built and moved every part: about 250 instructions more
    /// per request.)
    void reset() noexcept {
        conn = nullptr;
        op.reset();
        what = step::main;
        abandoned = false;
        watch = nullptr;
        if (acl.get()->count != 0) acl = acl_storage{};
        if (!multi.source.empty() || !multi.ops.empty()) multi = multi_storage{};
        child.clear();
        path.clear();
        parent_of.reset();
    }
};

}  // namespace zkr::detail
