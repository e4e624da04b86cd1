// The lock nodes that the acquires of one client have made and not yet given up, across every
// recipe object on that client. A waiter that reads a node of its own session which none of them
// has knows that the process forgot it (lock_in::node_read::stray). A client is known by its
// address alone (nothing of it is read): the lock simulation registers its simulated clients'.
#pragma once

#include <string>
#include <string_view>

namespace zkr {
class client;
}

namespace zkr::detail {

class client_nodes {
public:
    /// Registers `path` for the client at `owner` until the object dies: movable, not copyable.
    client_nodes() = default;
    client_nodes(const void* owner, std::string path);
    client_nodes(const client& c, std::string path) : client_nodes(static_cast<const void*>(&c), std::move(path)) {}
    client_nodes(client_nodes&& other) noexcept;
    client_nodes& operator=(client_nodes&& other) noexcept;
    client_nodes(const client_nodes&) = delete;
    client_nodes& operator=(const client_nodes&) = delete;
    ~client_nodes();

    const std::string& path() const noexcept { return path_; }

    /// The registration names `path` from now on (a create in flight's, once its reply names the
    /// node: the marker's room was made for that, so nothing is allocated).
    void rename(std::string_view path);

    /// What an acquire registers while its create under `lock_path` is in flight: its node may be
    /// any new child there, its reply not in yet. With room for the node's name to come (a
    /// protected sequential name: 40 + the recipe's name + 10).
    static std::string create_in_flight(std::string_view lock_path) {
        std::string marker;
        marker.reserve(lock_path.size() + 1 + 80);
        marker += lock_path;
        marker += '/';
        return marker;
    }
    /// Whether `registered` is create_in_flight(lock_path), without making that string.
    static bool is_create_in_flight(std::string_view registered, std::string_view lock_path) noexcept {
        return registered.size() == lock_path.size() + 1 && registered.back() == '/' && registered.substr(0, lock_path.size()) == lock_path;
    }

    /// Whether an acquire of the client at `owner` has registered `path`, or has a create in flight
    /// under its parent.
    static bool knows(const void* owner, const std::string& path);
    static bool knows(const client& c, const std::string& path) { return knows(static_cast<const void*>(&c), path); }

private:
    void reset() noexcept;
    void take_over(client_nodes& other) noexcept;
    const void* client_ = nullptr;
    std::string path_;
};

}  // namespace zkr::detail
