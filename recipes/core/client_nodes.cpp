#include "client_nodes.hpp"

#include <zkr/path.hpp>

#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace zkr::detail {

namespace {
// Keyed by the client object: an entry goes with the last acquire of its client that registered
// it, and every acquire holds its client alive meanwhile, so an address is never reused under it.
struct registry {
    std::mutex m;
    std::map<const client*, std::multiset<std::string>> nodes;
};

registry& the_registry() {
    static registry r;
    return r;
}
}  // namespace

client_nodes::client_nodes(const client& c, std::string path) : client_(&c), path_(std::move(path)) {
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    r.nodes[client_].insert(path_);
}

client_nodes::client_nodes(client_nodes&& other) noexcept
    : client_(std::exchange(other.client_, nullptr)), path_(std::move(other.path_)) {}

client_nodes& client_nodes::operator=(client_nodes&& other) noexcept {
    if (this != &other) {
        reset();
        client_ = std::exchange(other.client_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

client_nodes::~client_nodes() { reset(); }

void client_nodes::reset() noexcept {
    if (!client_) return;
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    auto it = r.nodes.find(client_);
    if (it != r.nodes.end()) {
        if (auto n = it->second.find(path_); n != it->second.end()) it->second.erase(n);
        if (it->second.empty()) r.nodes.erase(it);
    }
    client_ = nullptr;
}

bool client_nodes::knows(const client& c, const std::string& path) {
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    const auto it = r.nodes.find(&c);
    if (it == r.nodes.end()) return false;
    return it->second.count(path) > 0 || it->second.count(create_in_flight(std::string(parent_path(path)))) > 0;
}

}  // namespace zkr::detail
