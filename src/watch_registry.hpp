// The connection's watches: each request that asks for a watch has one `watch` (the caller's
// function, called at most once), and each try of it sent to the C client has one `entry`, the
// watcher's context the C client holds. Tries of one request (retries) share its watch, so that
// the caller hears one event, whichever try's watch fires first.
// The C client calls a watcher only if the request that set it succeeded (exists: also on
// no_node), and then at most once; when its handle closes it calls none again. So an entry
// goes when its watcher fires, when its request failed (settle), or when the handle closes
// (end_all: a watch that never fired then hears not_watching, and a session's watches end with
// the handle: a new session has none of them).
// Network thread only. Unit-tested without a server (watch_registry_test.cpp).
#pragma once

#include <zkr/detail/request.hpp>

#include <memory>
#include <string>
#include <unordered_map>

namespace zkr::detail {

class watch_registry {
public:
    /// One request's watch.
    struct watch {
        watch_function fn;
        std::string user_path;  // the path as the caller named it (no namespace)
        bool fired = false;
    };
    /// One try's watcher context, as handed to the C client.
    struct entry {
        watch_registry* registry = nullptr;
        std::shared_ptr<watch> of;
    };

    /// A try of a request with watch w is sent: the context for the C client (null without w).
    entry* add(std::shared_ptr<watch> w);
    /// The try's request completed: the C client holds its watcher only when `registered`;
    /// otherwise it never calls it, and the entry goes now.
    void settle(entry* e, bool registered);
    /// The C client called e's watcher: its watch hears `type`, unless it fired already.
    void fire(entry* e, watch_event_type type);
    /// The C client's handle closed: it calls no watcher again. Each watch not fired hears
    /// not_watching (once, though several of its tries were registered).
    void end_all();
    std::size_t size() const noexcept { return entries_.size(); }

private:
    std::unordered_map<const entry*, std::unique_ptr<entry>> entries_;
};

}  // namespace zkr::detail
