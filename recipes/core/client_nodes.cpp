#include "client_nodes.hpp"

#include <zkr/path.hpp>

#include <algorithm>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace zkr::detail {

namespace {
// Per client object, the registered objects themselves (no copy of their paths): a lock cycle
// registers and unregisters without allocating once its client's entry has room. An entry is
// kept when it empties (the next acquire of that client reuses it); empty entries are pruned once
// there are many. An empty entry left by a client that died matches nothing, so a new client at
// the same address finds nothing that is not its own.
struct registry {
    std::mutex m;
    std::vector<std::pair<const void*, std::vector<const client_nodes*>>> clients;
    std::size_t empty_entries = 0;

    std::vector<const client_nodes*>* of(const void* c) {
        const auto it = std::find_if(clients.begin(), clients.end(), [&](const auto& e) { return e.first == c; });
        return it == clients.end() ? nullptr : &it->second;
    }
};

constexpr std::size_t empty_entries_kept = 64;

registry& the_registry() {
    static registry r;
    return r;
}
}  // namespace

client_nodes::client_nodes(const void* owner, std::string path) : client_(owner), path_(std::move(path)) {
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    auto* nodes = r.of(client_);
    if (!nodes) nodes = &r.clients.emplace_back(client_, std::vector<const client_nodes*>{}).second;
    else if (nodes->empty()) --r.empty_entries;
    nodes->push_back(this);
}

// A move hands the registration over: the registry names the new object from now on.
client_nodes::client_nodes(client_nodes&& other) noexcept {
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    take_over(other);
}

client_nodes& client_nodes::operator=(client_nodes&& other) noexcept {
    if (this != &other) {
        reset();
        auto& r = the_registry();
        const std::lock_guard lock(r.m);
        take_over(other);
    }
    return *this;
}

client_nodes::~client_nodes() { reset(); }

void client_nodes::rename(std::string_view path) {
    const std::lock_guard lock(the_registry().m);  // (knows() reads path_ under it)
    path_.assign(path);
}

// Under the registry's lock.
void client_nodes::take_over(client_nodes& other) noexcept {
    client_ = std::exchange(other.client_, nullptr);
    path_ = std::move(other.path_);
    if (!client_) return;
    auto* nodes = the_registry().of(client_);
    std::replace(nodes->begin(), nodes->end(), static_cast<const client_nodes*>(&other), static_cast<const client_nodes*>(this));
}

void client_nodes::reset() noexcept {
    if (!client_) return;
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    if (auto* nodes = r.of(client_)) {
        std::erase(*nodes, this);
        if (nodes->empty() && ++r.empty_entries > empty_entries_kept) {
            std::erase_if(r.clients, [](const auto& e) { return e.second.empty(); });
            r.empty_entries = 0;
        }
    }
    client_ = nullptr;
}

bool client_nodes::knows(const void* owner, const std::string& path) {
    const std::string_view parent = parent_path(path);
    auto& r = the_registry();
    const std::lock_guard lock(r.m);
    const auto* nodes = r.of(owner);
    return nodes && std::any_of(nodes->begin(), nodes->end(), [&](const client_nodes* n) {
               return n->path_ == path || is_create_in_flight(n->path_, parent);
           });
}

}  // namespace zkr::detail
