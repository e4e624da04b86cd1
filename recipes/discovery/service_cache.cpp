// zkr::service_cache: a children_cache of the service node, each child's data read into a
// service_instance once per version of it.
#include <zkr/error.hpp>
#include <zkr/path.hpp>
#include <zkr/service_cache.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
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
    // Set by every event of the cache (each comes after its change is in the view), cleared before
    // a rebuild reads the view: a change during a rebuild makes the next call rebuild again.
    std::atomic<bool> stale{true};
    std::mutex mutex;
    std::map<std::string, entry> entries;
    std::shared_ptr<const std::vector<service_instance>> snapshot;
};

service_cache::service_cache(client& c, const std::string& base_path, const std::string& name)
    : name_(name),
      nodes_(c, service_path(base_path, name), true),
      parsed_(std::make_shared<parsed>()) {
    parsed_->log = c.logger();
    changes_ = nodes_.add_listener([p = parsed_](const cache_event&) { p->stale = true; });
}

service_cache::~service_cache() { close(); }

void service_cache::start() { nodes_.start(); }
void service_cache::close() noexcept { nodes_.close(); }
bool service_cache::wait_initialized(std::chrono::milliseconds timeout) const {
    return nodes_.wait_initialized(timeout);
}

std::vector<service_instance> service_cache::instances() const { return *snapshot(); }

std::shared_ptr<const std::vector<service_instance>> service_cache::snapshot() const {
    std::lock_guard lock(parsed_->mutex);
    if (!parsed_->stale.exchange(false) && parsed_->snapshot) return parsed_->snapshot;
    auto out = std::make_shared<std::vector<service_instance>>();
    const auto names = nodes_.children();
    auto& entries = parsed_->entries;
    std::erase_if(entries, [&](const auto& e) { return !std::binary_search(names.begin(), names.end(), e.first); });
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
                parsed_->log->warn("service {}: {} is not a service instance, left out: {}", name_, join_path(nodes_.path(), child), err.what());
            }
        }
        if (e.instance) out->push_back(*e.instance);
    }
    parsed_->snapshot = std::move(out);
    return parsed_->snapshot;
}

state_subscription service_cache::add_listener(std::function<void()> listener) {
    if (!listener)
        throw zkr::error(make_error_code(errc::invalid_argument), nodes_.path(), "empty listener");
    return nodes_.add_listener([p = parsed_, listener = std::move(listener)](const cache_event& e) {
        if (e.type != cache_event_type::added && e.type != cache_event_type::updated &&
            e.type != cache_event_type::removed)
            return;
        p->stale = true;  // (whichever listener runs first: instances() then shows the change)
        listener();
    });
}

}  // namespace zkr
