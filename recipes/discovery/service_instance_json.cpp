// A service instance in curator-x-discovery's JSON (Jackson's bytes from Curator's
// JsonInstanceSerializer in its default, compatible mode), and its UriSpec, on nlohmann's JSON.
#include <zkr/error.hpp>
#include <zkr/service_instance.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <limits>
#include <vector>

namespace zkr {

namespace {

// Keeps the order of an object's fields: Curator's, and a payload's as the user wrote it.
using json = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& what) {
    throw zkr::error(make_error_code(errc::invalid_argument), {}, what);
}

constexpr std::array<std::pair<service_type, std::string_view>, 4> type_names{{
    {service_type::dynamic, "DYNAMIC"},
    {service_type::dynamic_sequential, "DYNAMIC_SEQUENTIAL"},
    {service_type::static_, "STATIC"},
    {service_type::permanent, "PERMANENT"},
}};

// One part of a UriSpec: literal text, or a variable's name.
struct uri_part {
    std::string value;
    bool variable = false;
};

// The template split as Curator's UriSpec(String) splits it: on braces, a variable's name
// trimmed, no empty parts.
std::vector<uri_part> parse_uri_spec(std::string_view spec) {
    std::vector<uri_part> parts;
    bool inside = false;
    std::string token;
    auto flush = [&] {
        if (inside) {
            const auto first = token.find_first_not_of(" \t\r\n");
            token = first == std::string::npos
                        ? std::string()
                        : token.substr(first, token.find_last_not_of(" \t\r\n") - first + 1);
        }
        if (!token.empty()) parts.push_back({std::move(token), inside});
        token.clear();
    };
    for (const char ch : spec) {
        if (ch == '{') {
            if (inside)
                refuse("uri_spec \"" + std::string(spec) +
                       "\": '{' inside a variable (write {[} for a literal '{')");
            flush();
            inside = true;
        } else if (ch == '}') {
            if (!inside)
                refuse("uri_spec \"" + std::string(spec) +
                       "\": '}' without its '{' (write {]} for a literal '}')");
            flush();
            inside = false;
        } else {
            token += ch;
        }
    }
    if (inside)
        refuse("uri_spec \"" + std::string(spec) + "\": a variable not closed (expected '}')");
    flush();
    return parts;
}

// Strict UTF-8 (what Jackson writes and reads): dump refuses anything else.
std::string dump(const json& j, const char* what) {
    try {
        return j.dump();
    } catch (const json::exception&) {
        refuse(std::string(what) + " is not valid UTF-8");
    }
}

template <typename T>
T field_as(const json& j, const char* name) {
    const auto& v = j.at(name);
    if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) refuse(std::string("field \"") + name + "\" is not a string");
        return v.get<std::string>();
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) refuse(std::string("field \"") + name + "\" is not true or false");
        return v.get<bool>();
    } else {
        if (!v.is_number_integer())
            refuse(std::string("field \"") + name + "\" is not a whole number");
        if (v.is_number_unsigned()
                ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                : (v.get<std::int64_t>() < std::numeric_limits<T>::min() ||
                   v.get<std::int64_t>() > std::numeric_limits<T>::max()))
            refuse(std::string("field \"") + name + "\" is out of range");
        return static_cast<T>(v.get<std::int64_t>());
    }
}

// A field that may be missing or null.
template <typename T>
std::optional<T> optional_field(const json& j, const char* name) {
    if (!j.contains(name) || j.at(name).is_null()) return std::nullopt;
    return field_as<T>(j, name);
}

std::string uri_spec_from(const json& spec) {
    if (spec.is_null()) return {};
    if (!spec.is_object() || !spec.contains("parts") || !spec.at("parts").is_array())
        refuse("field \"uriSpec\" is not null or an object with a \"parts\" array");
    std::string out;
    for (const auto& part : spec.at("parts")) {
        if (!part.is_object()) refuse("a part of \"uriSpec\" is not an object");
        const auto value = optional_field<std::string>(part, "value").value_or("");
        if (optional_field<bool>(part, "variable").value_or(false)) {
            out += "{" + value + "}";
            continue;
        }
        for (const char ch : value)
            out += ch == '{' ? "{[}" : ch == '}' ? "{]}" : std::string(1, ch);
    }
    return out;
}

}  // namespace

std::string_view to_string(service_type type) noexcept {
    for (const auto& [t, name] : type_names)
        if (t == type) return name;
    return "DYNAMIC";
}

std::string service_instance_to_json(const service_instance& i) {
    json out;
    out["name"] = i.name;
    out["id"] = i.id;
    out["address"] = i.address ? json(*i.address) : json(nullptr);
    out["port"] = i.port ? json(*i.port) : json(nullptr);
    out["sslPort"] = i.ssl_port ? json(*i.ssl_port) : json(nullptr);
    json payload = json::parse(i.payload, nullptr, false);
    if (payload.is_discarded())
        refuse("payload is not one JSON value (a string is written \"\\\"text\\\"\"): " +
               i.payload.substr(0, 80));
    out["payload"] = std::move(payload);
    out["registrationTimeUTC"] = i.registration_time_utc;
    out["serviceType"] = std::string(to_string(i.type));
    if (i.uri_spec.empty()) {
        out["uriSpec"] = nullptr;
    } else {
        json parts = json::array();
        for (auto& p : parse_uri_spec(i.uri_spec))
            parts.push_back(json{{"value", std::move(p.value)}, {"variable", p.variable}});
        out["uriSpec"] = json{{"parts", std::move(parts)}};
    }
    if (!i.enabled) out["enabled"] = false;
    return dump(out, "a string of the instance");
}

service_instance service_instance_from_json(std::string_view text) {
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded()) refuse("not JSON: " + std::string(text.substr(0, 80)));
    if (!j.is_object()) refuse("not a JSON object: " + std::string(text.substr(0, 80)));
    service_instance i;
    auto name = optional_field<std::string>(j, "name");
    auto id = optional_field<std::string>(j, "id");
    if (!name || name->empty()) refuse("no service \"name\"");
    if (!id || id->empty()) refuse("no instance \"id\"");
    i.name = std::move(*name);
    i.id = std::move(*id);
    i.address = optional_field<std::string>(j, "address");
    i.port = optional_field<std::int32_t>(j, "port");
    i.ssl_port = optional_field<std::int32_t>(j, "sslPort");
    i.payload = j.contains("payload") ? dump(j.at("payload"), "the payload") : "null";
    i.registration_time_utc = optional_field<std::int64_t>(j, "registrationTimeUTC").value_or(0);
    if (const auto type = optional_field<std::string>(j, "serviceType")) {
        const auto it = std::find_if(type_names.begin(), type_names.end(),
                                     [&](const auto& t) { return t.second == *type; });
        if (it == type_names.end())
            refuse("unknown \"serviceType\" \"" + *type +
                   "\" (DYNAMIC, DYNAMIC_SEQUENTIAL, STATIC or PERMANENT)");
        i.type = it->first;
    }
    if (j.contains("uriSpec")) i.uri_spec = uri_spec_from(j.at("uriSpec"));
    i.enabled = optional_field<bool>(j, "enabled").value_or(true);
    return i;
}

std::string build_uri(const service_instance& i) {
    const auto number = [](const auto& v) { return v ? std::to_string(*v) : std::string(); };
    std::string type(to_string(i.type));
    for (auto& ch : type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::array<std::pair<std::string_view, std::string>, 10> fields{{
        {"[", "{"},
        {"]", "}"},
        {"scheme", i.ssl_port ? "https" : "http"},
        {"name", i.name},
        {"id", i.id},
        {"address", i.address.value_or("")},
        {"port", number(i.port)},
        {"ssl-port", number(i.ssl_port)},
        {"registration-time-utc", std::to_string(i.registration_time_utc)},
        {"service-type", type},
    }};
    std::string out;
    for (const auto& part : parse_uri_spec(i.uri_spec)) {
        if (!part.variable) {
            out += part.value;
            continue;
        }
        for (const auto& [name, value] : fields)
            if (name == part.value) out += value;
    }
    return out;
}

}  // namespace zkr
