// What the recipe tests share: a connected client, node counts, and the checker of the workers'
// shared log (zkr_lock_worker).
#pragma once

#include "process.hpp"
#include "shared_server.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>
#include <string>

namespace zkr::test {

/// A started client, connected.
inline std::unique_ptr<zkr::client> connect(const zkr::client_options& o) {
    auto c = std::make_unique<zkr::client>(o);
    c->start();
    REQUIRE(c->block_until_connected(std::chrono::seconds(10)));
    return c;
}

inline std::unique_ptr<zkr::client> connect(const std::string& cs, std::chrono::milliseconds session = std::chrono::seconds(4)) {
    return connect(test_options(cs, session));
}

/// Runs f, which must throw zkr::error with code and a message containing text.
template <typename F>
void expect_error(F&& f, zkr::errc code, const std::string& text) {
    try {
        f();
        FAIL("no error; expected " << zkr::make_error_code(code).message());
    } catch (const zkr::error& e) {
        INFO("message: " << e.what());
        CHECK(e.code() == code);
        CHECK_THAT(std::string(e.what()), contains(text, Catch::CaseSensitive::No));
    }
}

/// A path under a namespace of its own.
inline std::string recipe_path(const std::string& name, const std::string& leaf = "lock") {
    return zkr::join_path(zkr::join_path("/", unique_namespace(name)), leaf);
}

/// Makes path (and its parents) a plain, persistent node, for a test that counts a recipe's
/// requests. The test servers reap empty container nodes every 500 ms
/// (testing::cluster_options::container_check_ms), and a recipe's folders are containers: a reap
/// between two acquires makes the second create the folder again (its parents pipelined ahead of
/// its create: more requests, one more round trip), which is the recipe doing right, not a count
/// to assert. A plain folder is never reaped; the recipe's own requests are the same.
inline void plain_folder(zkr::client& c, const std::string& path) {
    boost::system::error_code ec;
    c.create(path, "", {.create_parents = true}, ec);
    REQUIRE((!ec || ec == zkr::errc::node_exists));
}

/// Removes a folder that create_parents made: a container, which the server may have reaped
/// already once its last child went (every 500 ms on the test servers; a TSan run lost that race
/// in a test's clean-up, 2026-12-07).
inline void remove_folder(zkr::client& c, const std::string& path) {
    boost::system::error_code ec;
    c.remove(path, {}, ec);
    REQUIRE((!ec || ec == zkr::errc::no_node));
}

/// Brings the server c is connected to up to date with every write the ensemble made before this
/// call (zkr has no sync() yet): one write of c's own (an ephemeral sequential scratch node, made
/// and deleted) goes through the leader, and c's server answers it only once it has applied every
/// earlier write. A follower's read may otherwise be older than another client's write that
/// already returned (ZooKeeper orders one client's operations, not several clients').
inline void catch_up(zkr::client& c) {
    const auto scratch = c.create("/zkr-catch-up-", "", {.mode = zkr::create_mode::ephemeral_sequential});
    c.remove(scratch.path);
}

inline std::size_t nodes_under(zkr::client& c, const std::string& path) {
    boost::system::error_code ec;
    auto r = c.get_children(path, ec);
    return ec ? 0 : r.children.size();
}

/// In the shared log's order (a real-time order: ACQ is written after the grant, REL before the
/// release, so each logged interval lies inside the real hold): the most leases held at once,
/// and whether tokens rise strictly and are never reused.
struct log_check {
    int acquisitions = 0;
    int max_concurrent = 0;  ///< the largest sum of qty held at once
    bool tokens_rise = true;
    bool tokens_unique = true;
};

inline log_check check_log(const std::string& file) {
    log_check r;
    int held = 0;
    long long last_token = -1;
    std::set<long long> tokens;
    for (const auto& line : read_lines(file)) {
        std::istringstream in(line);
        std::string kind;
        long long pid = 0, token = 0;
        int qty = 1;
        in >> kind >> pid >> token >> qty;
        if (kind == "ACQ") {
            ++r.acquisitions;
            held += qty;
            r.max_concurrent = std::max(r.max_concurrent, held);
            if (token <= last_token) r.tokens_rise = false;
            if (!tokens.insert(token).second) r.tokens_unique = false;
            last_token = token;
        } else if (kind == "REL") {
            held -= qty;
        }
    }
    return r;
}

/// A read-write lock's log ("RACQ|WACQ|RREL|WREL <pid> <token>", in real-time order): readers
/// overlap, a writer overlaps nobody, writers' tokens rise.
struct read_write_check {
    int reads = 0;
    int writes = 0;
    int max_readers = 0;         ///< the most readers holding at once
    bool writer_alone = true;    ///< no writer held beside anyone
    bool writer_tokens_rise = true;
};

inline read_write_check check_read_write_log(const std::string& file) {
    read_write_check r;
    int readers = 0, writers = 0;
    long long last_writer_token = -1;
    for (const auto& line : read_lines(file)) {
        std::istringstream in(line);
        std::string kind;
        long long pid = 0, token = 0;
        in >> kind >> pid >> token;
        if (kind == "RACQ") {
            ++r.reads;
            r.max_readers = std::max(r.max_readers, ++readers);
            if (writers > 0) r.writer_alone = false;
        } else if (kind == "WACQ") {
            ++r.writes;
            if (readers > 0 || writers > 0) r.writer_alone = false;
            ++writers;
            if (token <= last_writer_token) r.writer_tokens_rise = false;
            last_writer_token = token;
        } else if (kind == "RREL") {
            --readers;
        } else if (kind == "WREL") {
            --writers;
        }
    }
    return r;
}

}  // namespace zkr::test
