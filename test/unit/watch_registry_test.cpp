#include "watch_registry.hpp"

#include "zkr_catch.hpp"

#include <memory>
#include <vector>

using zkr::watch_event;
using zkr::watch_event_type;
using zkr::detail::watch_registry;

namespace {
// A request's watch that records what it hears.
std::shared_ptr<watch_registry::watch> recording(std::vector<watch_event>& heard, std::string path = "/a") {
    auto w = std::make_shared<watch_registry::watch>();
    w->fn = [&heard](watch_event e) { heard.push_back(std::move(e)); };
    w->user_path = std::move(path);
    return w;
}
}  // namespace

TEST_CASE("watch registry: a request without a watch sends no context") {
    watch_registry r;
    CHECK(r.add(nullptr) == nullptr);
    r.settle(nullptr, false);  // (its completion settles nothing)
    CHECK(r.size() == 0);
}

TEST_CASE("watch registry: a registered watch fires once, with the caller's path") {
    std::vector<watch_event> heard;
    watch_registry r;
    auto* e = r.add(recording(heard, "/locks/x"));
    REQUIRE(e != nullptr);
    CHECK(e->registry == &r);
    r.settle(e, true);
    CHECK(r.size() == 1);
    r.fire(e, watch_event_type::node_deleted);
    REQUIRE(heard.size() == 1);
    CHECK(heard[0].type == watch_event_type::node_deleted);
    CHECK(heard[0].path == "/locks/x");
    CHECK(r.size() == 0);
    r.end_all();  // fired already: nothing more
    CHECK(heard.size() == 1);
}

TEST_CASE("watch registry: a failed request's watch goes at once, and is never heard") {
    std::vector<watch_event> heard;
    watch_registry r;
    auto* e = r.add(recording(heard));
    r.settle(e, false);
    CHECK(r.size() == 0);
    r.end_all();
    CHECK(heard.empty());
}

TEST_CASE("watch registry: the tries of one request share its watch: one event in all") {
    std::vector<watch_event> heard;
    watch_registry r;
    auto w = recording(heard);
    auto* first = r.add(w);   // its reply lost, yet the server set the watch
    auto* second = r.add(w);  // the retry
    r.settle(first, true);
    r.settle(second, true);
    r.fire(second, watch_event_type::node_data_changed);
    r.fire(first, watch_event_type::node_data_changed);
    CHECK(heard.size() == 1);
    CHECK(r.size() == 0);
}

TEST_CASE("watch registry: the handle's close ends each watch not fired with not_watching, once") {
    std::vector<watch_event> heard;
    watch_registry r;
    auto shared = recording(heard, "/shared");
    r.settle(r.add(shared), true);
    r.settle(r.add(shared), true);
    auto* fired = r.add(recording(heard, "/fired"));
    r.settle(fired, true);
    r.fire(fired, watch_event_type::node_created);
    r.settle(r.add(recording(heard, "/pending")), true);  // its request's reply not in yet
    heard.clear();
    r.end_all();
    CHECK(r.size() == 0);
    REQUIRE(heard.size() == 2);
    for (const auto& e : heard) CHECK(e.type == watch_event_type::not_watching);
    CHECK(((heard[0].path == "/shared" && heard[1].path == "/pending") || (heard[0].path == "/pending" && heard[1].path == "/shared")));
}

TEST_CASE("watch registry: a watch set while the close ends the others belongs to the next handle") {
    std::vector<watch_event> heard;
    watch_registry r;
    watch_registry::entry* reset = nullptr;
    auto w = std::make_shared<watch_registry::watch>();
    w->fn = [&](watch_event e) {
        heard.push_back(e);
        reset = r.add(recording(heard, "/again"));  // a recipe watches again at once
    };
    w->user_path = "/first";
    r.settle(r.add(w), true);
    r.end_all();
    REQUIRE(heard.size() == 1);
    CHECK(r.size() == 1);  // the new one stays
    r.fire(reset, watch_event_type::node_created);
    REQUIRE(heard.size() == 2);
    CHECK(heard[1].path == "/again");
}
