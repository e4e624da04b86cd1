// `zkr elect --observe`'s reads of an election (cli/election_view.hpp), against a fake tree that
// changes between two reads: the race of issue 43, deterministically.
#include "../../cli/election_view.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

#include <functional>
#include <map>
#include <set>

namespace {

using zkr::cli::election_reads;

// A tree of one election path. `between` runs after the n-th read (0-based): the world moving on.
struct fake_tree final : election_reads {
    bool path_exists = false;
    std::map<std::string, std::string> nodes;  // name -> data
    std::map<int, std::function<void()>> between;
    int reads_done = 0;
    bool children_watch = false, creation_watch = false, data_watch = false;

    void step() {
        if (const auto it = between.find(reads_done++); it != between.end()) it->second();
    }
    std::vector<std::string> list(const std::string&, boost::system::error_code& ec) override {
        std::vector<std::string> out;
        if (!path_exists) {
            ec = make_error_code(zkr::errc::no_node);
        } else {
            children_watch = true;
            for (const auto& [name, data] : nodes) out.push_back(name);
        }
        step();
        return out;
    }
    bool exists(const std::string&, boost::system::error_code&) override {
        // A watch on a node that exists is a data watch: the participants joining never fire it.
        (path_exists ? data_watch : creation_watch) = true;
        const bool there = path_exists;
        step();
        return there;
    }
    std::optional<node_data> read(const std::string& node) override {
        const auto it = nodes.find(node.substr(node.rfind('/') + 1));
        step();
        if (it == nodes.end()) return std::nullopt;
        return node_data{it->second, 42};
    }
};

const std::string latch_node = "_c_0f-latch-0000000000";

}  // namespace

TEST_CASE("zkr elect --observe: an election path made between the listing and the exists is listed again (with a children watch)") {
    fake_tree t;
    t.between[0] = [&] {  // after the listing that found nothing: the path and its first participant appear
        t.path_exists = true;
        t.nodes[latch_node] = "worker-1";
    };
    const auto seen = zkr::cli::look_at_election(t, "/e");
    CHECK(seen.node == latch_node);
    CHECK(seen.leader == "worker-1");
    CHECK(seen.participants == 1);
    CHECK(t.children_watch);  // the next participant's arrival or the leader's going fires it
}

TEST_CASE("zkr elect --observe: a missing path leaves a watch on its creation, an empty one a children watch") {
    fake_tree missing;
    const auto none = zkr::cli::look_at_election(missing, "/e");
    CHECK(none.node.empty());
    CHECK(missing.creation_watch);
    CHECK_FALSE(missing.children_watch);

    fake_tree empty;
    empty.path_exists = true;
    CHECK(zkr::cli::look_at_election(empty, "/e").node.empty());
    CHECK(empty.children_watch);
}

TEST_CASE("zkr elect --observe: a leader gone between the listing and its read leaves the next one leading") {
    fake_tree t;
    t.path_exists = true;
    t.nodes[latch_node] = "first";
    t.nodes["_c_1a-latch-0000000001"] = "second";
    t.between[0] = [&] { t.nodes.erase(latch_node); };
    const auto seen = zkr::cli::look_at_election(t, "/e");
    CHECK(seen.leader == "second");
    CHECK(seen.participants == 2);
    // A selector's mutex nodes when no latch nodes are there.
    fake_tree s;
    s.path_exists = true;
    s.nodes["_c_2b-lock-0000000003"] = "selector";
    CHECK(zkr::cli::look_at_election(s, "/e").leader == "selector");
}
