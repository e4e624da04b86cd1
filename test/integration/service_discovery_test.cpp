// zkr::service_discovery, service_cache and service_provider against a real ZooKeeper: instances
// in Curator's layout and JSON, every service type's life, registrations that come back after a
// session expiry and a deletion, a cache and a provider that follow changes and skip what is not
// an instance, misuse refused before anything is sent with nothing left behind; and with Curator
// 5.4's curator-x-discovery on one base path (a Java process,
// test/peers/CuratorDiscoveryWorker.java), each reads the other's instances.
#include "peers.hpp"
#include "process.hpp"
#include "recipe_checks.hpp"

#include <zkr/service_discovery.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "zkr_catch.hpp"

#include <csignal>
#include <cstdio>
#include <map>
#include <set>

using namespace std::chrono_literals;
using zkr::service_instance;
using zkr::service_type;
using zkr::test::connect;

namespace {

service_instance instance(const std::string& name, const std::string& id,
                          service_type type = service_type::dynamic) {
    service_instance i;
    i.name = name;
    i.id = id;
    i.address = "10.0.0." + std::to_string(id.size());
    i.port = 8080;
    i.payload = "\"" + id + "\"";
    i.type = type;
    i.uri_spec = "{scheme}://{address}:{port}";
    return i;
}

std::set<std::string> ids(const std::vector<service_instance>& v) {
    std::set<std::string> out;
    for (const auto& i : v) out.insert(i.id);
    return out;
}

}  // namespace

TEST_CASE(
    "service discovery: each type's node in Curator's layout and JSON, found, updated, "
    "unregistered, and close() leaves only the permanent") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::test::recipe_path("discovery", "services");
    auto c = connect(zk.connect_string());
    auto observer = connect(zk.connect_string());
    auto d = std::make_unique<zkr::service_discovery>(*c, base);
    const auto dyn = d->register_service(instance("api", "dyn"));
    CHECK(dyn.registration_time_utc > 0);  // filled in
    const auto stat = d->register_service(instance("api", "stat", service_type::static_));
    const auto perm = d->register_service(instance("api", "perm", service_type::permanent));
    const auto seq =
        d->register_service(instance("worker", "seq", service_type::dynamic_sequential));
    const auto anon = d->register_service(instance("worker", ""));
    CHECK(anon.id.size() == 36);  // a random UUID

    // The nodes: <base>/<name>/<id>, the data Curator's JSON, ephemeral for the dynamic types.
    const auto node = [&](const service_instance& i) {
        return zkr::join_path(zkr::join_path(base, i.name), i.id);
    };
    const auto read = observer->get_data(node(dyn));
    CHECK(read.data == zkr::service_instance_to_json(dyn));
    CHECK(read.stat.ephemeral_owner == c->session_id());
    CHECK(observer->get_data(node(stat)).stat.ephemeral_owner == 0);
    CHECK(observer->get_data(node(perm)).stat.ephemeral_owner == 0);
    const auto workers = observer->get_children(zkr::join_path(base, "worker")).children;
    CHECK(workers.size() == 2);
    CHECK(std::count_if(workers.begin(), workers.end(), [](const std::string& n) {
              return n.find("seq00000") != std::string::npos;
          }) == 1);

    CHECK(d->query_for_names() == std::vector<std::string>{"api", "worker"});
    CHECK(ids(d->query_for_instances("api")) == std::set<std::string>{"dyn", "stat", "perm"});
    CHECK(ids(d->query_for_instances("worker")) == std::set<std::string>{"seq", anon.id});
    CHECK(d->query_for_instances("nothing").empty());
    CHECK(d->query_for_instance("api", "stat") == stat);
    CHECK_FALSE(d->query_for_instance("api", "none"));
    CHECK(d->registered().size() == 5);

    auto changed = dyn;
    changed.port = 9090;
    changed.payload = R"({"@class":"java.util.HashMap","weight":3})";
    d->update_service(changed);
    CHECK(
        zkr::test::eventually([&] { return d->query_for_instance("api", "dyn") == changed; }, 5s));
    auto changed_perm = perm;
    changed_perm.enabled = false;
    d->update_service(changed_perm);
    CHECK(d->query_for_instance("api", "perm") == changed_perm);

    CHECK(d->unregister_service(stat));
    CHECK_FALSE(observer->exists(node(stat)));
    CHECK(d->unregister_service(stat));  // again: known gone

    d->close();
    CHECK(ids(zkr::service_discovery(*observer, base).query_for_instances("api")) ==
          std::set<std::string>{"perm"});
    CHECK(zkr::service_discovery(*observer, base).query_for_instances("worker").empty());
    // Another discovery object (any process) unregisters the permanent instance by name and id.
    CHECK(zkr::service_discovery(*observer, base).unregister_service(perm));
    CHECK_FALSE(observer->exists(node(perm)));
}

TEST_CASE(
    "service discovery: an instance comes back after its session expires and after an operator "
    "deletes it, and a cache in another client follows") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::test::recipe_path("discovery", "back");
    auto c = connect(zk.connect_string(), 2s);
    auto observer = connect(zk.connect_string());
    zkr::service_discovery d(*c, base);
    zkr::service_cache cache(*observer, base, "api");
    std::atomic<int> changes{0};
    auto sub = cache.add_listener([&] { ++changes; });
    cache.start();
    REQUIRE(cache.wait_initialized(5s));
    CHECK(cache.instances().empty());  // the service node does not exist yet
    const auto one = d.register_service(instance("api", "one"));
    const auto node = zkr::join_path(zkr::join_path(base, "api"), "one");
    CHECK(zkr::test::eventually(
        [&] { return cache.instances() == std::vector<service_instance>{one}; }, 5s));
    CHECK(changes.load() >= 1);

    zkr::test::expire_session(zk.connect_string(), *c);
    CHECK(zkr::test::eventually(
        [&] {
            const auto st = observer->exists(node);
            return st && st->ephemeral_owner == c->session_id() &&
                   cache.instances() == std::vector<service_instance>{one};
        },
        10s));

    observer->remove(node);  // an operator's delete
    CHECK(zkr::test::eventually([&] { return observer->exists(node).has_value(); }, 5s));
    CHECK(observer->get_data(node).data ==
          zkr::service_instance_to_json(one));  // the same bytes again

    auto updated = one;
    updated.port = 1;
    d.update_service(updated);
    CHECK(zkr::test::eventually(
        [&] { return cache.instances() == std::vector<service_instance>{updated}; }, 5s));
    CHECK(d.unregister_service(updated));
    CHECK(zkr::test::eventually([&] { return cache.instances().empty(); }, 5s));
}

TEST_CASE(
    "service provider: round robin over the usable instances, leaving out the disabled, the down "
    "and what is not an instance") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::test::recipe_path("discovery", "provider");
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
    auto o = zkr::test::test_options(zk.connect_string());
    o.logger = std::make_shared<spdlog::logger>("provider", sink);
    o.logger->set_level(spdlog::level::warn);
    auto c = connect(o);
    zkr::service_discovery d(*c, base);
    for (const auto* id : {"a", "b", "c"}) d.register_service(instance("api", id));
    auto off = instance("api", "off");
    off.enabled = false;
    d.register_service(off);
    // Not an instance: left out (and logged), never a crash.
    c->create(zkr::join_path(zkr::join_path(base, "api"), "junk"), "{\"name\":");
    c->create(zkr::join_path(zkr::join_path(base, "api"), "empty"), "");

    zkr::service_provider p(*c, base, "api");
    p.start();
    REQUIRE(p.wait_initialized(5s));
    REQUIRE(zkr::test::eventually([&] { return p.get_all_instances().size() == 3; }, 5s));
    std::vector<std::string> turns;
    for (int n = 0; n < 6; ++n) turns.push_back(p.get_instance()->id);
    CHECK(turns == std::vector<std::string>{"a", "b", "c", "a", "b", "c"});
    std::string warned;
    for (const auto& line : sink->last_formatted()) warned += line;
    CHECK_THAT(warned, zkr::test::contains("/api/junk is not a service instance"));
    CHECK_THAT(warned, zkr::test::contains("/api/empty is not a service instance"));
    CHECK(ids(d.query_for_instances("api")) == std::set<std::string>{"a", "b", "c", "off"});

    p.note_error(*p.get_instance());  // "a": one error leaves it in
    CHECK(p.get_all_instances().size() == 3);
    p.note_error(instance("api", "a"));
    CHECK(ids(p.get_all_instances()) == std::set<std::string>{"b", "c"});

    zkr::service_provider sticky(*c, base, "api", zkr::provider_strategy::sticky);
    sticky.start();
    REQUIRE(zkr::test::eventually([&] { return sticky.get_all_instances().size() == 3; }, 5s));
    const auto held = sticky.get_instance()->id;
    for (int n = 0; n < 3; ++n) CHECK(sticky.get_instance()->id == held);
    d.unregister_service(instance("api", held));
    CHECK(zkr::test::eventually([&] { return sticky.get_instance()->id != held; }, 5s));

    zkr::service_provider none(*c, base, "nothing", zkr::provider_strategy::random);
    none.start();
    REQUIRE(none.wait_initialized(5s));
    CHECK_FALSE(none.get_instance());
}

TEST_CASE(
    "service discovery: misuse is refused before anything is sent, and a failed registration "
    "leaves nothing") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::test::recipe_path("discovery", "misuse");
    auto c = connect(zk.connect_string());
    using zkr::errc;
    using zkr::test::expect_error;
    expect_error([&] { zkr::service_discovery bad(*c, "services/"); }, errc::invalid_path,
                 "invalid discovery base path");
    expect_error([&] { zkr::service_cache bad(*c, base, "a/b"); }, errc::invalid_argument,
                 "invalid service name");
    expect_error(
        [&] {
            zkr::service_provider bad(*c, base, "api", zkr::provider_strategy::round_robin,
                                      {0, 1s});
        },
        errc::invalid_argument, "error_threshold");
    zkr::service_discovery d(*c, base);
    expect_error([&] { d.register_service(instance("", "x")); }, errc::invalid_argument,
                 "invalid service name");
    expect_error([&] { d.register_service(instance("api", "..")); }, errc::invalid_argument,
                 "invalid instance id");
    auto bad_payload = instance("api", "x");
    bad_payload.payload = "not json";
    expect_error([&] { d.register_service(bad_payload); }, errc::invalid_argument,
                 "payload is not one JSON value");
    auto bad_uri = instance("api", "x");
    bad_uri.uri_spec = "{port";
    expect_error([&] { d.register_service(bad_uri); }, errc::invalid_argument, "not closed");
    auto huge = instance("api", "x");
    huge.payload = "\"" + std::string(1100 * 1024, 'x') + "\"";
    expect_error([&] { d.register_service(huge); }, errc::data_too_large, "");
    CHECK_FALSE(c->exists(base));  // nothing was sent
    d.register_service(instance("api", "x"));
    expect_error([&] { d.register_service(instance("api", "x")); }, errc::invalid_argument,
                 "registered by this service_discovery already");
    expect_error([&] { d.update_service(instance("api", "y")); }, errc::invalid_argument,
                 "not registered by this service_discovery");
    expect_error([&] { d.update_service(instance("api", "x", service_type::static_)); },
                 errc::invalid_argument, "cannot change an instance's type");

    // An id another session holds: not taken over; the registration times out and leaves nothing.
    auto other = connect(zk.connect_string());
    zkr::service_discovery theirs(*other, base, {300ms});
    expect_error([&] { theirs.register_service(instance("api", "x")); }, errc::operation_timeout,
                 "not registered within 300 ms");
    CHECK(theirs.registered().empty());
    CHECK(other->get_data(zkr::join_path(zkr::join_path(base, "api"), "x")).stat.ephemeral_owner ==
          c->session_id());
    d.close();
    expect_error([&] { d.register_service(instance("api", "z")); }, errc::closed, "after close()");
    CHECK(zkr::test::nodes_under(*other, zkr::join_path(base, "api")) == 0);
}

// A Curator worker's view of a service (zkr::test::read_curator_view): per instance, sorted by id,
// "ID<TAB>ADDRESS<TAB>PORT<TAB>PAYLOAD<TAB>URI<TAB>ENABLED<TAB>TYPE"; id -> the rest.

TEST_CASE(
    "interop: zkr's service_discovery and Curator's curator-x-discovery on one base path see each "
    "other's instances, both ways, separate processes") {
    if (!zkr::test::curator_discovery_classpath)
        FAIL(
            "the discovery interop test needs javac and Debian's libcurator-discovery-java "
            "(scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto base = zkr::test::recipe_path("interop-discovery", "services");
    auto c = connect(cs);
    zkr::service_discovery d(*c, base);
    auto mine = instance("api", "zkr-1");
    mine.address = "zkr-host";
    mine.port = 8080;
    mine.payload =
        "\"zkr:zkr-1\"";  // a String payload, as Curator's ServiceDiscovery<String> reads it
    mine = d.register_service(mine);
    zkr::service_cache cache(*c, base, "api");
    cache.start();
    const auto view = zkr::test::temp_file("curator-discovery");
    zkr::test::child_process curator(
        {"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_discovery_classpath,
         "CuratorDiscoveryWorker", cs, base, "api", "curator-1", view});
    // Curator reads zkr's instance: every field, and the URI built from zkr's UriSpec.
    std::map<std::string, std::string> expected{
        {"zkr-1", "zkr-host\t8080\tzkr:zkr-1\thttp://zkr-host:8080\ttrue\tDYNAMIC"},
        {"curator-1",
         "curator-host\t7000\tcurator:curator-1\thttp://curator-host:7000\ttrue\tDYNAMIC"}};
    CHECK(zkr::test::eventually([&] { return zkr::test::read_curator_view(view) == expected; },
                                60s));  // (a JVM starts in a few seconds)
    // zkr reads Curator's instance.
    REQUIRE(zkr::test::eventually([&] { return cache.instances().size() == 2; }, 10s));
    const auto theirs = cache.instances().front();  // "curator-1" sorts first
    CHECK(theirs.id == "curator-1");
    CHECK(theirs.name == "api");
    CHECK(theirs.address == "curator-host");
    CHECK(theirs.port == 7000);
    CHECK(!theirs.ssl_port);
    CHECK(theirs.payload == "\"curator:curator-1\"");
    CHECK(theirs.type == service_type::dynamic);
    CHECK(theirs.registration_time_utc > 0);
    CHECK(zkr::build_uri(theirs) == "http://curator-host:7000");
    // An update and a disabled instance reach Curator (Curator 4 and later read "enabled").
    mine.port = 9090;
    mine.enabled = false;
    d.update_service(mine);
    expected["zkr-1"] = "zkr-host\t9090\tzkr:zkr-1\thttp://zkr-host:9090\tfalse\tDYNAMIC";
    CHECK(zkr::test::eventually([&] { return zkr::test::read_curator_view(view) == expected; }, 10s));
    // Curator's instance leaves (SIGTERM: its discovery closes); zkr sees it gone.
    curator.kill(SIGTERM);
    CHECK(curator.wait() == 143);  // (a JVM ended by SIGTERM after its shutdown hooks)
    CHECK(zkr::test::eventually(
        [&] { return cache.instances() == std::vector<service_instance>{mine}; }, 10s));
    std::remove(view.c_str());
}
