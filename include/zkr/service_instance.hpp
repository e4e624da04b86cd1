/// @file
/// zkr::service_instance: one instance of a service, in curator-x-discovery's JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zkr {

/// How an instance's node lives (curator-x-discovery's ServiceType, written as its upper-case
/// name).
enum class service_type {
    /// An ephemeral node: gone when the registering session ends. While registered it is made
    /// again after a session loss or a deletion by anyone.
    dynamic,
    /// As dynamic, the node's name the id followed by a sequence number (new at each incarnation).
    dynamic_sequential,
    /// A persistent node ("STATIC"), kept while registered, deleted by unregister_service and
    /// close(); left behind if the process dies.
    static_,
    /// A persistent node made at register and deleted only by unregister_service: close() and the
    /// process's end leave it. (Curator's close() deletes it too, CURATOR-94.)
    permanent,
};

/**
 * One instance of a service: the fields of curator-x-discovery's ServiceInstance. Its node is
 * `<base>/<name>/<id>` and its data this struct in Curator's JSON (service_instance_to_json).
 */
struct service_instance {
    /// The service's name: one node name under the discovery's base path.
    std::string name;
    /// This instance's id: one node name; empty at register: a random UUID.
    std::string id;
    std::optional<std::string> address;  ///< its host name or IP (null: none)
    std::optional<std::int32_t> port;  ///< its port (null: none)
    std::optional<std::int32_t> ssl_port;  ///< its TLS port (null: none)
    /// The payload as JSON text; "null" for none. A Curator ServiceDiscovery<String>'s payload is
    /// a JSON string ("\"text\""); Java classes other than String, Integer and maps carry their
    /// class, as Jackson writes them ({"@class":"java.util.HashMap","k":"v"}).
    std::string payload = "null";
    /// Milliseconds since the epoch (UTC); 0 at register: the time of the registration.
    std::int64_t registration_time_utc = 0;
    service_type type = service_type::dynamic;  ///< how its node lives
    /// Curator's UriSpec as its template: literal text and {variables}, as
    /// "{scheme}://{address}:{port}"; empty for none (written as null).
    std::string uri_spec;
    /// Written only when false ("enabled":false, which Curator 4 and later read): Curator's own
    /// writer leaves the field out, and Curator 2 and 3 refuse fields they do not know. A provider
    /// never picks a disabled instance.
    bool enabled = true;

    /// Equal when every field is.
    friend bool operator==(const service_instance&, const service_instance&) = default;
};

/// The instance in curator-x-discovery's JSON: Jackson's bytes, in Curator's field order (name,
/// id, address, port, sslPort, payload, registrationTimeUTC, serviceType, uriSpec). Throws
/// zkr::error (invalid_argument) saying what is wrong: a payload that is not one JSON value, a
/// string that is not UTF-8, a uri_spec with an unmatched brace.
std::string service_instance_to_json(const service_instance& instance);

/// Reads an instance as Curator writes it: unknown fields are ignored, missing ones take
/// Curator's defaults (enabled, dynamic, time 0, nulls). Throws zkr::error (invalid_argument)
/// saying what is wrong: not JSON, not an object, a field of the wrong type, no name or id, an
/// unknown serviceType.
service_instance service_instance_from_json(std::string_view json);

/// The instance's URI from its uri_spec, as Curator's UriSpec.build(instance): {scheme} is https
/// with an ssl_port, else http; {name}, {id}, {address}, {port}, {ssl-port},
/// {registration-time-utc} and {service-type} (lower case) are the instance's, empty when unset;
/// {[} and {]} are literal braces; an unknown variable is left out. Throws zkr::error
/// (invalid_argument) on an unmatched brace.
std::string build_uri(const service_instance& instance);

/// The upper-case name Curator writes ("DYNAMIC", "DYNAMIC_SEQUENTIAL", "STATIC", "PERMANENT").
std::string_view to_string(service_type type) noexcept;

}  // namespace zkr
