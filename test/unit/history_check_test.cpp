// The fault suite's checker, on made-up histories: it must find each kind of violation.
#include "history.hpp"
#include "process.hpp"

#include <cstdio>
#include <fstream>

#include "zkr_catch.hpp"

using zkr::test::check_histories;
using zkr::test::parse_history;

namespace {

// One hold: grant at g, store read and write, confirm sent at c (ok unless told), release.
std::vector<std::string> hold(long g, long c, long token, const char* write = "accepted", const char* confirm = "ok",
                              const char* state = "held", int qty = 1) {
    const auto t = std::to_string(token);
    return {"grant " + std::to_string(g - 1) + " " + std::to_string(g) + " " + t + " " + std::to_string(qty),
            "read " + std::to_string(g) + " " + t + " ok 0",
            std::string("write ") + std::to_string(c - 1) + " " + t + " " + write,
            "confirm " + std::to_string(c) + " " + std::to_string(c + 1) + " " + t + " " + confirm,
            "release " + std::to_string(c + 2) + " " + t + " ok " + state};
}

std::vector<std::string> cat(std::vector<std::vector<std::string>> parts) {
    std::vector<std::string> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

zkr::test::check_options store(long value, long count) {
    zkr::test::check_options o;
    o.store_value = value;
    o.store_count = count;
    return o;
}

}  // namespace

TEST_CASE("history check: disjoint holds with rising tokens pass") {
    const auto a = parse_history(0, cat({hold(10, 20, 100), hold(50, 60, 300)}));
    const auto b = parse_history(1, cat({hold(30, 40, 200)}));
    const auto r = check_histories({a, b}, store(3, 3));
    CHECK(r.violations.empty());
    CHECK(r.proven_holds == 3);
    CHECK(r.max_concurrent == 1);
    CHECK(r.writes_accepted == 3);
}

TEST_CASE("history check: two proven holds that overlap are a violation") {
    const auto a = parse_history(0, hold(10, 30, 100));
    const auto b = parse_history(1, hold(20, 40, 200));
    const auto r = check_histories({a, b}, store(2, 2));
    CHECK(r.max_concurrent == 2);
    CHECK_FALSE(r.violations.empty());
}

TEST_CASE("history check: an unproven hold may overlap (a paused holder that lost its lock)") {
    const auto a = parse_history(0, hold(10, 30, 100, "refused", "lost", "lost"));
    const auto b = parse_history(1, hold(20, 25, 200));
    const auto r = check_histories({a, b}, store(1, 1));
    CHECK(r.violations.empty());
    CHECK(r.proven_holds == 1);
    CHECK(r.holds_lost == 1);
    CHECK(r.writes_refused == 1);
}

TEST_CASE("history check: semaphore holds count by qty against the maximum") {
    zkr::test::check_options o;
    o.mutex_like = false;
    o.max_holders = 3;
    const auto a = parse_history(0, {"grant 9 10 100 2", "confirm 30 31 100 ok", "release 32 100 ok held"});
    const auto b = parse_history(1, {"grant 19 20 200 1", "confirm 40 41 200 ok", "release 42 200 ok held"});
    CHECK(check_histories({a, b}, o).violations.empty());
    const auto c = parse_history(2, {"grant 24 25 300 1", "confirm 28 29 300 ok", "release 29 300 ok held"});
    const auto r = check_histories({a, b, c}, o);
    CHECK(r.max_concurrent == 4);
    CHECK_FALSE(r.violations.empty());
}

TEST_CASE("history check: tokens falling in grant order, or granted twice, are violations") {
    const auto a = parse_history(0, hold(10, 20, 300));
    const auto b = parse_history(1, hold(30, 40, 200));
    CHECK_FALSE(check_histories({a, b}, store(2, 2)).violations.empty());
    const auto c = parse_history(1, hold(30, 40, 300));
    CHECK_FALSE(check_histories({a, c}, store(2, 2)).violations.empty());
}

TEST_CASE("history check: with lock caching one worker may hold one token again, but no other worker, nor after another's") {
    auto cached = store(3, 3);
    cached.cached_holds = true;
    const auto a = parse_history(0, cat({hold(10, 20, 100), hold(30, 40, 100)}));
    const auto b = parse_history(1, hold(50, 60, 200));
    CHECK(check_histories({a, b}, cached).violations.empty());
    CHECK_FALSE(check_histories({a, b}, store(3, 3)).violations.empty());  // (without caching: granted twice)
    // Another worker with the same token; or the token back after another worker's hold.
    const auto c = parse_history(1, cat({hold(50, 60, 100)}));
    CHECK_FALSE(check_histories({a, c}, cached).violations.empty());
    const auto back = parse_history(0, cat({hold(10, 20, 100), hold(50, 60, 100)}));
    const auto between = parse_history(1, hold(30, 40, 200));
    CHECK_FALSE(check_histories({back, between}, cached).violations.empty());
}

TEST_CASE("history check: a lost update, or a store count the workers disagree with, is a violation") {
    const auto a = parse_history(0, cat({hold(10, 20, 100), hold(30, 40, 200)}));
    CHECK_FALSE(check_histories({a}, store(1, 2)).violations.empty());  // two writes, value 1
    CHECK_FALSE(check_histories({a}, store(3, 3)).violations.empty());  // the store saw a write nobody made
    CHECK(check_histories({a}, store(2, 2)).violations.empty());
}

TEST_CASE("history check: a proven holder refused by the store is a violation") {
    const auto a = parse_history(0, hold(10, 20, 100, "refused"));
    CHECK_FALSE(check_histories({a}, store(0, 0)).violations.empty());
}

TEST_CASE("history check: liveness and outcomes") {
    const auto a = parse_history(0, cat({{"session 1 77 abcd", "nogrant 1 5 fail timeout", "nogrant 6 8 unknown errc-4"},
                                         hold(10, 20, 100)}));
    const auto b = parse_history(1, hold(3, 5, 50));
    CHECK(a.failed_acquires == 1);
    CHECK(a.unknown_acquires == 1);
    REQUIRE(a.sessions.size() == 1);
    CHECK(a.sessions[0].id == 77);
    const auto firsts = zkr::test::first_grant_after({a, b}, 8);
    CHECK(firsts.at(0) == 10);
    CHECK_FALSE(firsts.at(1).has_value());
    CHECK_THROWS(parse_history(0, {"grant 1 2"}));               // a torn line
    CHECK_THROWS(parse_history(0, {"write 5 100 accepted"}));    // outside any hold
}

TEST_CASE("history: a live file's line caught in the middle of its write is left out until its newline is written") {
    const auto file = zkr::test::temp_file("torn-history");
    std::ofstream(file) << "session 1 77 ab\ngrant 59109004102231 59110423822190 ";  // the write's first page only
    CHECK(zkr::test::read_finished_lines(file) == std::vector<std::string>{"session 1 77 ab"});
    CHECK(zkr::test::read_lines(file).size() == 2);
    std::ofstream(file, std::ios::app) << "1 1\n";
    CHECK(zkr::test::read_finished_lines(file) ==
          std::vector<std::string>{"session 1 77 ab", "grant 59109004102231 59110423822190 1 1"});
    CHECK(parse_history(0, zkr::test::read_finished_lines(file)).holds.size() == 1);
    std::remove(file.c_str());
}
