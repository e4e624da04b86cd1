// zkr::group_member against a real ZooKeeper: members see each other and their data, a member
// comes back after its session expires, an id taken by another session waits, misuse is refused;
// and with Curator 5.4's GroupMember on one group (Java processes, test/peers/CuratorWorker.java),
// every member sees every other, both ways.
#include "peers.hpp"
#include "process.hpp"
#include "recipe_checks.hpp"

#include <zkr/group_member.hpp>

#include "zkr_catch.hpp"

#include <csignal>
#include <sstream>

using namespace std::chrono_literals;
using zkr::test::connect;
using members = std::map<std::string, std::string>;

TEST_CASE("group member: members see each other's ids and data, a member comes back after its session expires, and one that leaves is gone") {
    auto& zk = zkr::test::shared_server();
    const auto group = zkr::test::recipe_path("group", "members");
    auto a = connect(zk.connect_string(), 2s);
    auto b = connect(zk.connect_string());
    zkr::group_member ma(*a, group, "a", "alpha"), mb(*b, group, "b", "beta");
    CHECK(ma.current_members() == members{{"a", "alpha"}});  // itself, before it starts
    ma.start();
    mb.start();
    REQUIRE(ma.wait_joined(5s));
    REQUIRE(mb.wait_joined(5s));
    const members both{{"a", "alpha"}, {"b", "beta"}};
    CHECK(zkr::test::eventually([&] { return ma.current_members() == both && mb.current_members() == both; }, 5s));
    mb.set_data("beta2");
    CHECK(zkr::test::eventually([&] { return ma.current_members().at("b") == "beta2"; }, 5s));
    // a's session expires: its member node comes back on the new session, and b sees it again.
    zkr::test::expire_session(zk.connect_string(), *a);
    CHECK(zkr::test::eventually([&] {
        const auto st = b->exists(zkr::join_path(group, "a"));
        return st && st->ephemeral_owner == a->session_id() && mb.current_members().count("a") == 1;
    }, 10s));
    ma.close();
    CHECK(zkr::test::eventually([&] { return mb.current_members() == members{{"b", "beta2"}}; }, 5s));
    CHECK_FALSE(b->exists(zkr::join_path(group, "a")));
}

TEST_CASE("group member: an id another session holds is not taken over, and the member joins once it goes") {
    auto& zk = zkr::test::shared_server();
    const auto group = zkr::test::recipe_path("group", "taken");
    auto first = connect(zk.connect_string());
    auto second = connect(zk.connect_string());
    auto m1 = std::make_unique<zkr::group_member>(*first, group, "same", "one");
    m1->start();
    REQUIRE(m1->wait_joined(5s));
    zkr::group_member m2(*second, group, "same", "two");
    m2.start();
    CHECK_FALSE(m2.wait_joined(500ms));
    CHECK(second->get_data(zkr::join_path(group, "same")).data == "one");  // not overwritten
    m1.reset();  // leaves
    REQUIRE(m2.wait_joined(5s));
    CHECK(second->get_data(zkr::join_path(group, "same")).data == "two");
}

TEST_CASE("group member: a bad group path or member id is refused with a clear error") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    for (const std::string id : {"", ".", "..", "a/b"}) {
        try {
            zkr::group_member m(*c, "/g", id);
            FAIL("id '" << id << "' accepted");
        } catch (const zkr::error& e) {
            CHECK(e.code() == zkr::errc::invalid_argument);
            CHECK_THAT(std::string(e.what()), zkr::test::contains("invalid member id"));
        }
    }
    try {
        zkr::group_member m(*c, "g/", "x");
        FAIL("a bad group path accepted");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::invalid_path);
        CHECK_THAT(std::string(e.what()), zkr::test::contains("invalid group path"));
    }
    CHECK_FALSE(c->exists("/g"));
}

TEST_CASE("interop: zkr's group members and Curator's GroupMember on one group see each other, both ways, separate processes") {
    if (!zkr::test::curator_classpath) FAIL("the group interop test needs javac and Debian's Curator (scripts/run installs them)");
    auto& zk = zkr::test::shared_server();
    const auto cs = zk.connect_string();
    const auto group = zkr::test::recipe_path("interop-group", "members");
    auto a = connect(cs);
    auto b = connect(cs);
    zkr::group_member za(*a, group, "zkr-a", "a"), zb(*b, group, "zkr-b", "b");
    za.start();
    zb.start();
    struct curator {
        std::string id, view;
        zkr::test::child_process process;
        bool left = false;
    };
    std::vector<curator> curators;
    for (const char* id : {"curator-1", "curator-2"}) {
        const auto view = zkr::test::temp_file(id);
        curators.push_back({id, view, zkr::test::child_process({"/usr/bin/java", "-Xmx128m", "-cp", zkr::test::curator_classpath, "CuratorWorker", cs,
                                                                 "groupmember", group, "0", "0", view, id})});
    }
    members all{{"zkr-a", "a"}, {"zkr-b", "b"}, {"curator-1", "curator:curator-1"}, {"curator-2", "curator:curator-2"}};
    const auto everyone_sees = [&](const members& expected) {
        return zkr::test::eventually(
            [&] {
                if (za.current_members() != expected || zb.current_members() != expected) return false;
                for (const auto& c : curators)
                    if (!c.left && zkr::test::read_curator_view(c.view) != expected) return false;
                return true;
            },
            60s);  // (a JVM starts in a few seconds)
    };
    CHECK(everyone_sees(all));
    // A zkr member's new data reaches Curator's members.
    zb.set_data("b2");
    all["zkr-b"] = "b2";
    CHECK(everyone_sees(all));
    // A Curator member leaves (SIGTERM: it closes); zkr's members see it gone.
    curators[1].process.kill(SIGTERM);
    CHECK(curators[1].process.wait() == 143);  // (a JVM ended by SIGTERM after its shutdown hooks)
    curators[1].left = true;
    all.erase("curator-2");
    CHECK(everyone_sees(all));
    // A zkr member leaves; Curator's member sees it gone.
    za.close();
    all.erase("zkr-a");
    CHECK(zkr::test::eventually([&] { return zkr::test::read_curator_view(curators[0].view) == all && zb.current_members() == all; }, 10s));
    curators[0].process.kill(SIGTERM);
    curators[0].process.wait();
    for (const auto& c : curators) std::remove(c.view.c_str());
}
