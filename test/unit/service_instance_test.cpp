// A service instance in curator-x-discovery's JSON (recipes/discovery/service_instance_json.cpp),
// its UriSpec, and a provider's choices (recipes/discovery/provider_choice.hpp), without a server.
#include "../../recipes/discovery/provider_choice.hpp"

#include <zkr/error.hpp>
#include <zkr/service_instance.hpp>

#include "zkr_catch.hpp"

namespace {

using zkr::service_instance;
using zkr::service_type;
using namespace std::chrono_literals;

service_instance curator_example() {
    service_instance i;
    i.name = "svc";
    i.id = "id-1";
    i.address = "10.0.0.1";
    i.port = 8080;
    i.payload = "\"hello\"";
    i.registration_time_utc = 1700000000000;
    i.uri_spec = "{scheme}://{address}:{port}";
    return i;
}

// What Curator 5.4's JsonInstanceSerializer wrote for curator_example() (Jackson 2.14, observed).
const std::string curator_bytes =
    R"({"name":"svc","id":"id-1","address":"10.0.0.1","port":8080,"sslPort":null,"payload":"hello","registrationTimeUTC":1700000000000,)"
    R"("serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},)"
    R"({"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]}})";

// The error message of reading `json`, or "" if it was read.
std::string read_error(const std::string& json) {
    try {
        (void)zkr::service_instance_from_json(json);
        return "";
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_argument);
        return e.what();
    }
}

std::string write_error(const service_instance& i) {
    try {
        (void)zkr::service_instance_to_json(i);
        return "";
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_argument);
        return e.what();
    }
}

}  // namespace

TEST_CASE("service instance: written in Curator's bytes, field for field") {
    CHECK(zkr::service_instance_to_json(curator_example()) == curator_bytes);
    auto i = curator_example();
    i.uri_spec.clear();
    i.payload = "null";
    i.address.reset();
    i.port.reset();
    i.ssl_port = 8443;
    i.type = service_type::static_;
    CHECK(
        zkr::service_instance_to_json(i) ==
        R"({"name":"svc","id":"id-1","address":null,"port":null,"sslPort":8443,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"STATIC","uriSpec":null})");
    i.enabled =
        false;  // only then is the field written (Curator 2 and 3 refuse fields they do not know)
    CHECK_THAT(zkr::service_instance_to_json(i),
               zkr::test::ends_with(R"("uriSpec":null,"enabled":false})"));
}

TEST_CASE(
    "service instance: Curator's JSON is read back, and what zkr writes reads back the same") {
    CHECK(zkr::service_instance_from_json(curator_bytes) == curator_example());
    auto i = curator_example();
    for (const auto type : {service_type::dynamic, service_type::dynamic_sequential,
                            service_type::static_, service_type::permanent}) {
        i.type = type;
        i.enabled = !i.enabled;
        i.payload =
            R"({"@class":"java.util.HashMap","zeta":1,"alpha":[true,null]})";  // the order kept
        CHECK(zkr::service_instance_from_json(zkr::service_instance_to_json(i)) == i);
    }
}

TEST_CASE("service instance: unknown fields are ignored and missing ones take Curator's defaults") {
    const auto i = zkr::service_instance_from_json(
        R"({"id":"x","name":"svc","future":{"a":[1]},"enabled":true})");
    CHECK(i.name == "svc");
    CHECK(i.id == "x");
    CHECK(!i.address);
    CHECK(!i.port);
    CHECK(i.payload == "null");
    CHECK(i.registration_time_utc == 0);
    CHECK(i.type == service_type::dynamic);
    CHECK(i.uri_spec.empty());
    CHECK(i.enabled);
    // A literal brace in a part (Curator's add(Part) allows one) comes back as {[} or {]}.
    const auto j = zkr::service_instance_from_json(
        R"({"name":"s","id":"i","uriSpec":{"parts":[{"value":"a{b}","variable":false},{"value":"port","variable":true}]}})");
    CHECK(j.uri_spec == "a{[}b{]}{port}");
}

TEST_CASE("service instance: what is wrong is said, on reading and on writing") {
    CHECK_THAT(read_error("{\"name\":"), zkr::test::contains("not JSON"));
    CHECK_THAT(read_error("[1,2]"), zkr::test::contains("not a JSON object"));
    CHECK_THAT(read_error(R"({"id":"x"})"), zkr::test::contains("no service \"name\""));
    CHECK_THAT(read_error(R"({"name":"s","id":""})"), zkr::test::contains("no instance \"id\""));
    CHECK_THAT(read_error(R"({"name":"s","id":"x","port":"80"})"),
               zkr::test::contains("\"port\" is not a whole number"));
    CHECK_THAT(read_error(R"({"name":"s","id":"x","port":4294967296})"),
               zkr::test::contains("\"port\" is out of range"));
    CHECK_THAT(read_error(R"({"name":"s","id":"x","enabled":"yes"})"),
               zkr::test::contains("\"enabled\" is not true or false"));
    CHECK_THAT(read_error(R"({"name":"s","id":"x","serviceType":"SOMETIMES"})"),
               zkr::test::contains("unknown \"serviceType\" \"SOMETIMES\""));
    CHECK_THAT(read_error(R"({"name":"s","id":"x","uriSpec":"http://x"})"),
               zkr::test::contains("\"uriSpec\""));
    auto i = curator_example();
    i.payload = "hello";
    CHECK_THAT(write_error(i), zkr::test::contains("payload is not one JSON value"));
    i.payload = "1 2";
    CHECK_THAT(write_error(i), zkr::test::contains("payload is not one JSON value"));
    i = curator_example();
    i.uri_spec = "{scheme://x";
    CHECK_THAT(write_error(i), zkr::test::contains("not closed"));
    i.uri_spec = "x}";
    CHECK_THAT(write_error(i), zkr::test::contains("'}' without its '{'"));
    i.uri_spec = "{a{b}}";
    CHECK_THAT(write_error(i), zkr::test::contains("'{' inside a variable"));
    i = curator_example();
    i.address = std::string("\xff\xfe", 2);
    CHECK_THAT(write_error(i), zkr::test::contains("not valid UTF-8"));
}

TEST_CASE("service instance: build_uri fills the variables as Curator's UriSpec.build does") {
    auto i = curator_example();
    CHECK(zkr::build_uri(i) == "http://10.0.0.1:8080");
    i.ssl_port = 8443;
    i.uri_spec = "{scheme}://{ address }:{ssl-port}/{name}/{id}?t={service-type}&{unknown}{[}x{]}";
    CHECK(zkr::build_uri(i) == "https://10.0.0.1:8443/svc/id-1?t=dynamic&{x}");
    i.uri_spec.clear();
    CHECK(zkr::build_uri(i).empty());
}

TEST_CASE(
    "service provider choice: round robin in turn, random by the draw, sticky while offered") {
    using zkr::detail::choice_state;
    using zkr::detail::choice_strategy;
    std::vector<service_instance> instances(3);
    instances[0].id = "a";
    instances[1].id = "b";
    instances[2].id = "c";
    const std::vector<const service_instance*> three{&instances[0], &instances[1], &instances[2]};
    choice_state s;
    std::vector<std::size_t> picked;
    for (int n = 0; n < 6; ++n)
        picked.push_back(*zkr::detail::choose(choice_strategy::round_robin, s, three, 0));
    CHECK(picked == std::vector<std::size_t>{0, 1, 2, 0, 1, 2});
    CHECK(*zkr::detail::choose(choice_strategy::random, s, three, 7) == 1);
    CHECK(!zkr::detail::choose(choice_strategy::round_robin, s, {}, 0));

    choice_state sticky;
    const auto first = *zkr::detail::choose(choice_strategy::sticky, sticky, three, 0);
    for (int n = 0; n < 4; ++n)
        CHECK(*zkr::detail::choose(choice_strategy::sticky, sticky, three, n) == first);
    auto without = three;
    without.erase(without.begin() + static_cast<long>(first));
    const auto next = *zkr::detail::choose(choice_strategy::sticky, sticky, without, 0);
    CHECK(without[next]->id != three[first]->id);
    // It keeps the new one even when the old one is offered again.
    CHECK(three[*zkr::detail::choose(choice_strategy::sticky, sticky, three, 0)]->id ==
          without[next]->id);
    CHECK(!zkr::detail::choose(choice_strategy::sticky, sticky, {}, 0));
}

TEST_CASE(
    "service provider choice: an instance is down after two errors within 30 s of its first, until "
    "then") {
    zkr::detail::down_instances down;
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    down.note_error("a", t0);
    CHECK(!down.is_down("a", t0));
    down.note_error("a", t0 + 10s);
    CHECK(down.is_down("a", t0 + 10s));
    CHECK(!down.is_down("b", t0 + 10s));
    CHECK(down.is_down("a", t0 + 29s));
    CHECK(!down.is_down("a", t0 + 30s));  // the record ends 30 s after the first error
    down.note_error("a", t0 + 31s);
    CHECK(!down.is_down("a", t0 + 31s));  // a fresh count
    down.note_error("b", t0 + 31s);
    down.note_error("b", t0 + 70s);  // more than 30 s apart: never two in one window
    CHECK(!down.is_down("b", t0 + 70s));
}
