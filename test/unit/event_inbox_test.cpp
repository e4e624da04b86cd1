// One event at a time (recipes/core/event_inbox.hpp): what an engine's feed relies on.
#include "../../recipes/core/event_inbox.hpp"

#include "zkr_catch.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

using zkr::detail::event_inbox;

TEST_CASE("event inbox: an event fed while nothing runs runs at once") {
    event_inbox<std::string> inbox;
    std::vector<std::string> ran;
    CHECK(inbox.feed(std::string("a"), [&](std::string& e) { ran.push_back(e); }));
    CHECK(ran == std::vector<std::string>{"a"});
    CHECK_FALSE(inbox.busy());
}

TEST_CASE("event inbox: events fed by a step wait their turn, in order, after the event at hand") {
    event_inbox<std::string> inbox;
    std::vector<std::string> ran;
    std::vector<bool> nested_ran;
    std::function<void(std::string&)> step = [&](std::string& e) {
        ran.push_back(e);
        CHECK(inbox.busy());
        if (e == "a") {
            nested_ran.push_back(inbox.feed(std::string("b"), step));
            nested_ran.push_back(inbox.feed(std::string("c"), step));
            ran.push_back("a done");
        }
        if (e == "b") nested_ran.push_back(inbox.feed(std::string("d"), step));
    };
    CHECK(inbox.feed(std::string("a"), step));
    CHECK(ran == std::vector<std::string>{"a", "a done", "b", "c", "d"});
    CHECK(nested_ran == std::vector<bool>{false, false, false});
    CHECK_FALSE(inbox.busy());
    // Ready for the next feed, with nothing left over.
    ran.clear();
    CHECK(inbox.feed(std::string("e"), step));
    CHECK(ran == std::vector<std::string>{"e"});
}

TEST_CASE("event inbox: a step may move out of its event, and a step that throws leaves the inbox ready") {
    event_inbox<std::string> inbox;
    std::string taken;
    inbox.feed(std::string(100, 'x'), [&](std::string& e) { taken = std::move(e); });
    CHECK(taken == std::string(100, 'x'));
    CHECK_THROWS(inbox.feed(std::string("boom"), [&](std::string& e) {
        inbox.feed(std::string("queued"), [](std::string&) {});
        throw std::runtime_error(e);
    }));
    CHECK_FALSE(inbox.busy());
    std::vector<std::string> ran;
    CHECK(inbox.feed(std::string("after"), [&](std::string& e) { ran.push_back(e); }));
    CHECK(ran == std::vector<std::string>{"after"});  // the event queued before the throw is gone
}
