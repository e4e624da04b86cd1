// zkr::service_cache: a children_cache of the service node, each child's data read into a
// service_instance once per version of it.
#include <zkr/error.hpp>
#include <zkr/path.hpp>
#include <zkr/service_cache.hpp>

#include <spdlog/spdlog.h>

#include <mutex>

namespace zkr {

namespace {

std::string service_path(const std::string& base_path, const std::string& name) {
    if (auto e = path_error(base_path))
        throw zkr::error(
            make_error_code(errc::invalid_path), base_path,
            "invalid discovery base path \"" + printable_path(base_path) + "\": " + *e);
    if (auto e = node_name_error(name))
        throw zkr::error(make_error_code(errc::invalid_argument), base_path,
                         "invalid service name \"" + printable_path(name) + "\": " + *e);
    return join_path(base_path, name);
}

}  // namespace

// Each child's instance as read from one version of its node (mzxid: a node made again at the
// same version is another version), or nothing when that version is not an instance.
struct service_cache::parsed {
    struct entry {
        std::int64_t mzxid = 0;
        std::int32_t version = -1;
        std::optional<service_instance> instance;
    };
    std::shared_ptr<spdlog::logger> log;
    mutable std::mutex mutex;
    mutable std::map<std::string, entry> entries;
};

service_cache::service_cache(client& c, const std::string& base_path, const std::string& name)
    : name_(name),
      nodes_(c, service_path(base_path, name), true),
      parsed_(std::make_unique<parsed>()) {
    parsed_->log = c.logger();
}

service_cache::~service_cache() { close(); }

void service_cache::start() { nodes_.start(); }
void service_cache::close() noexcept { nodes_.close(); }
bool service_cache::wait_initialized(std::chrono::milliseconds timeout) const {
    return nodes_.wait_initialized(timeout);
}

std::vector<service_instance> service_cache::instances() const {
    std::vector<service_instance> out;
    const auto names = nodes_.children();
    std::lock_guard lock(parsed_->mutex);
    auto& entries = parsed_->entries;
    std::erase_if(entries, [&](const auto& e) {
        return !std::binary_search(names.begin(), names.end(), e.first);
    });
    for (const auto& child : names) {
        auto node = nodes_.get(child);
        if (!node) continue;  // removed since the listing
        auto& e = entries[child];
        if (e.mzxid != node->stat.mzxid || e.version != node->stat.version) {
            e.mzxid = node->stat.mzxid;
            e.version = node->stat.version;
            try {
                e.instance = service_instance_from_json(node->data);
            } catch (const zkr::error& err) {
                e.instance.reset();
                parsed_->log->warn("service {}: {} is not a service instance, left out: {}", name_,
                                   join_path(nodes_.path(), child), err.what());
            }
        }
        if (e.instance) out.push_back(*e.instance);
    }
    return out;
}

state_subscription service_cache::add_listener(std::function<void()> listener) {
    if (!listener)
        throw zkr::error(make_error_code(errc::invalid_argument), nodes_.path(), "empty listener");
    return nodes_.add_listener([listener = std::move(listener)](const cache_event& e) {
        if (e.type == cache_event_type::added || e.type == cache_event_type::updated ||
            e.type == cache_event_type::removed)
            listener();
    });
}

}  // namespace zkr
