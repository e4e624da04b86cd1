// zkr::node_cache and zkr::children_cache: a tree_cache of depth 0 and of depth 1.
#include <zkr/children_cache.hpp>
#include <zkr/node_cache.hpp>

#include <zkr/error.hpp>
#include <zkr/path.hpp>

namespace zkr {

node_cache::node_cache(client& c, std::string path, bool cache_data) : cache_(c, std::move(path), {.max_depth = 0, .cache_data = cache_data}) {}

children_cache::children_cache(client& c, std::string path, bool cache_data)
    : cache_(c, std::move(path), {.max_depth = 1, .cache_data = cache_data}) {}

std::optional<cached_node> children_cache::get(std::string_view child_name) const {
    if (child_name.empty() || child_name.find('/') != std::string_view::npos) return std::nullopt;
    return cache_.get(join_path(cache_.path(), std::string(child_name)));
}

// The parent's own events are not the children's.
state_subscription children_cache::add_listener(std::function<void(const cache_event&)> listener) {
    if (!listener) throw zkr::error(make_error_code(errc::invalid_argument), cache_.path(), "children cache listener is empty");
    return cache_.add_listener([listener = std::move(listener), parent = cache_.path()](const cache_event& e) {
        if (e.path == parent) return;
        listener(e);
    });
}

}  // namespace zkr
