// zkr::service_discovery: each registered instance kept by a persistent_node (a permanent one made
// once), queries read now; the JSON is service_instance_json.cpp's.
#include "../../src/protect_prefix.hpp"

#include <zkr/error.hpp>
#include <zkr/path.hpp>
#include <zkr/persistent_node.hpp>
#include <zkr/service_discovery.hpp>

#include <spdlog/spdlog.h>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <future>

namespace zkr {

struct service_discovery::registration {
    service_instance instance;
    std::string path;
    std::unique_ptr<persistent_node> node;  // null for a permanent instance
};

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
    throw zkr::error(make_error_code(errc::invalid_argument), path, what);
}

void check_name(const std::string& base, const char* what, const std::string& name) {
    if (auto e = node_name_error(name))
        refuse(base, std::string("invalid ") + what + " \"" + printable_path(name) + "\": " + *e);
}

create_mode mode_of(service_type t) {
    switch (t) {
        case service_type::dynamic_sequential:
            return create_mode::ephemeral_sequential;
        case service_type::static_:
        case service_type::permanent:
            return create_mode::persistent;
        case service_type::dynamic:
            break;
    }
    return create_mode::ephemeral;
}

// An instance's node: <base>/<name>/<id>.
std::string instance_path(const std::string& base, const std::string& name, const std::string& id) {
    return join_path(join_path(base, name), id);
}

std::int64_t now_utc_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

service_discovery::service_discovery(client& c, std::string base_path,
                                     service_discovery_options options)
    : client_(c), base_path_(std::move(base_path)), options_(options) {
    if (auto e = path_error(base_path_))
        throw zkr::error(
            make_error_code(errc::invalid_path), base_path_,
            "invalid discovery base path \"" + printable_path(base_path_) + "\": " + *e);
    if (options_.timeout.count() < 0)
        refuse(base_path_, "service_discovery_options: timeout must not be negative");
}

service_discovery::~service_discovery() { close(); }

service_instance service_discovery::register_service(service_instance instance) {
    check_name(base_path_, "service name", instance.name);
    if (instance.id.empty()) instance.id = detail::random_uuid();
    check_name(base_path_, "instance id", instance.id);
    if (instance.registration_time_utc == 0) instance.registration_time_utc = now_utc_ms();
    auto data = service_instance_to_json(instance);
    auto reg = std::make_shared<registration>();
    reg->instance = instance;
    reg->path = instance_path(base_path_, instance.name, instance.id);
    if (instance.type != service_type::permanent) {
        persistent_node_options o;
        // A lost reply must not leave a second sequential node behind.
        o.use_protection = instance.type == service_type::dynamic_sequential;
        reg->node =
            std::make_unique<persistent_node>(client_, reg->path, mode_of(instance.type), data, o);
    }
    const key k{instance.name, instance.id};
    {
        std::lock_guard lock(mutex_);
        if (closed_)
            throw zkr::error(make_error_code(errc::closed), reg->path,
                             "register_service after close()");
        if (!registered_.emplace(k, reg).second)
            refuse(reg->path, "instance \"" + instance.id + "\" of \"" + instance.name +
                                  "\" is registered by this service_discovery already: "
                                  "update_service changes it");
    }
    // Withdraws the registration if it did not take (nothing is left behind).
    auto withdraw = [&] {
        {
            std::lock_guard lock(mutex_);
            const auto it = registered_.find(k);
            if (it != registered_.end() && it->second == reg) registered_.erase(it);
        }
        if (reg->node) reg->node->close(options_.timeout);
    };
    try {
        if (!reg->node) {
            create_options o;
            o.mode = create_mode::persistent;
            o.create_parents = true;
            boost::system::error_code ec;
            client_.create(reg->path, data, o, ec);
            // A permanent instance outlives its registrations: a later one writes its data.
            if (ec == errc::node_exists)
                client_.set_data(reg->path, data);
            else
                detail::throw_if(ec, reg->path,
                                 "registering " + instance.name + " instance " + instance.id);
            return instance;
        }
        reg->node->start();
        if (!reg->node->wait_for_initial_create(options_.timeout))
            throw zkr::error(make_error_code(errc::operation_timeout), reg->path,
                             "instance \"" + instance.id + "\" of \"" + instance.name +
                                 "\" not registered within " +
                                 std::to_string(options_.timeout.count()) +
                                 " ms (no connection, or its node is another session's)");
        return instance;
    } catch (...) {
        withdraw();
        throw;
    }
}

void service_discovery::update_service(service_instance instance) {
    std::shared_ptr<registration> reg;
    service_instance registered;  // as last given (another update may run beside this one)
    {
        std::lock_guard lock(mutex_);
        const auto it = registered_.find({instance.name, instance.id});
        if (it != registered_.end()) {
            reg = it->second;
            registered = reg->instance;
        }
    }
    const auto path = instance_path(base_path_, instance.name, instance.id);
    if (!reg)
        refuse(path, "instance \"" + instance.id + "\" of \"" + instance.name +
                         "\" is not registered by this service_discovery");
    if (instance.type != registered.type)
        refuse(path, "update_service cannot change an instance's type (" +
                         std::string(to_string(registered.type)) + " to " +
                         std::string(to_string(instance.type)) +
                         "): unregister it, then register it again");
    if (instance.registration_time_utc == 0)
        instance.registration_time_utc = registered.registration_time_utc;
    auto data = service_instance_to_json(instance);
    if (reg->node)
        reg->node->set_data(std::move(data));
    else
        client_.set_data(reg->path, std::move(data));
    std::lock_guard lock(mutex_);
    reg->instance = std::move(instance);
}

bool service_discovery::unregister_service(const service_instance& instance) noexcept {
    try {
        std::shared_ptr<registration> reg;
        {
            std::lock_guard lock(mutex_);
            const auto it = registered_.find({instance.name, instance.id});
            if (it != registered_.end()) {
                reg = it->second;
                registered_.erase(it);
            }
        }
        if (reg && reg->node) return reg->node->close(options_.timeout);
        if (node_name_error(instance.name) || node_name_error(instance.id)) return false;
        boost::system::error_code ec;
        client_.remove(instance_path(base_path_, instance.name, instance.id), {}, ec);
        return !ec || ec == errc::no_node;
    } catch (const std::exception& e) {  // (a lock or an allocation: nothing else throws here)
        client_.logger()->warn("unregister_service {} {}: {}", instance.name, instance.id,
                               e.what());
        return false;
    }
}

std::vector<std::string> service_discovery::query_for_names() {
    boost::system::error_code ec;
    auto r = client_.get_children(base_path_, ec);
    if (ec == errc::no_node) return {};
    detail::throw_if(ec, base_path_, "listing the services");
    std::sort(r.children.begin(), r.children.end());
    return std::move(r.children);
}

std::vector<service_instance> service_discovery::query_for_instances(const std::string& name) {
    check_name(base_path_, "service name", name);
    const auto service = join_path(base_path_, name);
    boost::system::error_code ec;
    auto listing = client_.get_children(service, ec);
    if (ec == errc::no_node) return {};
    detail::throw_if(ec, service, "listing the instances of " + name);
    std::sort(listing.children.begin(), listing.children.end());
    // Every read sent before the first reply is awaited: one round trip for the lot.
    std::vector<std::future<data_result>> reads;
    reads.reserve(listing.children.size());
    for (const auto& child : listing.children)
        reads.push_back(client_.async_get_data(join_path(service, child), boost::asio::use_future));
    std::vector<service_instance> out;
    for (std::size_t n = 0; n < reads.size(); ++n) {
        const auto path = join_path(service, listing.children[n]);
        try {
            auto read = reads[n].get();
            out.push_back(service_instance_from_json(read.data));
        } catch (const boost::system::system_error& e) {
            if (e.code() == errc::no_node) continue;  // gone since the listing
            if (e.code() == errc::invalid_argument) {
                client_.logger()->warn("service {}: {} is not a service instance, left out: {}",
                                       name, path, e.what());
                continue;
            }
            for (auto& rest : reads)
                if (rest.valid()) rest.wait();  // no reply left for nobody
            throw zkr::error(e.code(), path, "reading an instance of " + name);
        }
    }
    return out;
}

std::optional<service_instance> service_discovery::query_for_instance(const std::string& name,
                                                                      const std::string& id) {
    check_name(base_path_, "service name", name);
    check_name(base_path_, "instance id", id);
    const auto path = instance_path(base_path_, name, id);
    boost::system::error_code ec;
    auto read = client_.get_data(path, ec);
    if (ec == errc::no_node) return std::nullopt;
    detail::throw_if(ec, path, "reading an instance of " + name);
    try {
        return service_instance_from_json(read.data);
    } catch (const zkr::error& e) {
        client_.logger()->warn("service {}: {} is not a service instance: {}", name, path,
                               e.what());
        return std::nullopt;
    }
}

std::vector<service_instance> service_discovery::registered() const {
    std::lock_guard lock(mutex_);
    std::vector<service_instance> out;
    for (const auto& [k, reg] : registered_) out.push_back(reg->instance);
    return out;
}

void service_discovery::close() noexcept {
    std::map<key, std::shared_ptr<registration>> ending;
    try {
        std::lock_guard lock(mutex_);
        closed_ = true;
        ending.swap(registered_);
    } catch (...) {  // (a lock: nothing to close then)
        return;
    }
    for (auto& [k, reg] : ending) {
        try {
            if (reg->node) reg->node->close(options_.timeout);
        } catch (const std::exception& e) {  // (a lock or an allocation: nothing else throws there)
            client_.logger()->warn("closing service discovery: instance {} of {}: {}", k.second,
                                   k.first, e.what());
        }
    }
}

}  // namespace zkr
