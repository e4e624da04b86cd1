// Namespaces, chroot and digest authentication with ACLs.
#include "shared_server.hpp"

#include <zkr/path.hpp>

#include "zkr_catch.hpp"

#include <future>

using namespace std::chrono_literals;

namespace {
void start(zkr::client& c) {
    c.start();
    REQUIRE(c.block_until_connected(10s));
}
}  // namespace

TEST_CASE("a chrooted connect string: paths are relative to the chroot") {
    auto& zk = zkr::test::shared_server();
    const std::string root = zkr::join_path("/", zkr::test::unique_namespace("chroot"));
    zkr::client raw(zkr::test::test_options(zk.connect_string()));
    start(raw);
    raw.create(root);
    zkr::client c(zkr::test::test_options(zk.connect_string() + root));
    start(c);
    auto r = c.create("/inside", "v", {.mode = zkr::create_mode::ephemeral_sequential});
    CHECK(r.path.rfind("/inside", 0) == 0);  // the C client strips the chroot
    CHECK(raw.get_data(root + r.path).data == "v");
    CHECK(c.get_children("/").children.size() == 1);
}

TEST_CASE("a namespace on top of a chroot") {
    auto& zk = zkr::test::shared_server();
    const std::string root = zkr::join_path("/", zkr::test::unique_namespace("chroot-ns"));
    zkr::client raw(zkr::test::test_options(zk.connect_string()));
    start(raw);
    raw.create(root);
    auto o = zkr::test::test_options(zk.connect_string() + root);
    o.name_space = "app";
    zkr::client c(o);
    start(c);
    c.create("/x", "y");
    CHECK(raw.get_data(root + "/app/x").data == "y");
}

TEST_CASE("digest auth: a creator-only ACL shuts a second client out") {
    auto& zk = zkr::test::shared_server();
    const std::string ns = zkr::test::unique_namespace("auth");
    auto owner_opts = zkr::test::test_options(zk.connect_string());
    owner_opts.auth.push_back({"digest", "alice:secret"});
    owner_opts.name_space = ns;
    zkr::client owner(owner_opts);
    start(owner);
    owner.create("/private", "mine", {.acl = zkr::creator_all_acl()});
    CHECK(owner.get_data("/private").data == "mine");

    auto other_opts = zkr::test::test_options(zk.connect_string());
    other_opts.name_space = ns;
    zkr::client other(other_opts);
    start(other);
    boost::system::error_code ec;
    other.get_data("/private", ec);
    CHECK(ec == zkr::errc::no_auth);
    other.set_data("/private", "theirs", -1, ec);
    CHECK(ec == zkr::errc::no_auth);

    auto wrong_opts = other_opts;
    wrong_opts.auth.push_back({"digest", "alice:wrong"});
    zkr::client wrong(wrong_opts);
    start(wrong);
    wrong.get_data("/private", ec);
    CHECK(ec == zkr::errc::no_auth);

    auto same_opts = other_opts;
    same_opts.auth.push_back({"digest", "alice:secret"});
    zkr::client same(same_opts);
    start(same);
    CHECK(same.get_data("/private").data == "mine");
}
