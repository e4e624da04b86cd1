#include "submission_queue.hpp"

#include "zkr_catch.hpp"

#include <memory>
#include <thread>
#include <vector>

using submissions = zkr::detail::basic_submission_queue<std::unique_ptr<int>>;
using submission_refusal = submissions::refusal;

TEST_CASE("submission queue: refused before start, the item kept for its caller to answer") {
    submissions q;
    auto item = std::make_unique<int>(1);
    int scheduled = 0;
    CHECK(q.push(item, [&] { ++scheduled; }) == submission_refusal::not_started);
    REQUIRE(item);
    CHECK(*item == 1);
    CHECK(scheduled == 0);
    CHECK_FALSE(q.started());
}

TEST_CASE("submission queue: items drain in submission order, with one drain scheduled per batch") {
    submissions q;
    int begun = 0;
    CHECK(q.start([&] { ++begun; }));
    CHECK(q.start([&] { ++begun; }));  // a second start begins nothing more
    CHECK(begun == 1);
    CHECK(q.started());
    int scheduled = 0;
    for (int i = 0; i < 3; ++i) {
        auto item = std::make_unique<int>(i);
        CHECK(q.push(item, [&] { ++scheduled; }) == submission_refusal::none);
        CHECK_FALSE(item);  // moved into the queue
    }
    CHECK(scheduled == 1);
    std::vector<std::unique_ptr<int>> batch;
    q.drain_into(batch);
    REQUIRE(batch.size() == 3);
    for (int i = 0; i < 3; ++i) CHECK(*batch[static_cast<std::size_t>(i)] == i);
    // The drain ran: the next item schedules another.
    batch.clear();
    auto next = std::make_unique<int>(3);
    CHECK(q.push(next, [&] { ++scheduled; }) == submission_refusal::none);
    CHECK(scheduled == 2);
    q.drain_into(batch);
    REQUIRE(batch.size() == 1);
    CHECK(*batch[0] == 3);
}

TEST_CASE("submission queue: once closed, items, steps and a start are refused, and only the first close counts") {
    submissions q;
    REQUIRE(q.start([] {}));
    int steps = 0;
    CHECK(q.if_open([&] { ++steps; }));
    CHECK(steps == 1);
    CHECK(q.close());
    CHECK_FALSE(q.close());
    auto item = std::make_unique<int>(7);
    int scheduled = 0;
    CHECK(q.push(item, [&] { ++scheduled; }) == submission_refusal::closed);
    CHECK(item);
    CHECK(scheduled == 0);
    CHECK_FALSE(q.if_open([&] { ++steps; }));
    CHECK(steps == 1);
    int begun = 0;
    CHECK_FALSE(q.start([&] { ++begun; }));
    CHECK(begun == 0);
}

TEST_CASE("submission queue: a closed queue refuses a start that never happened, as closed") {
    submissions q;
    CHECK(q.close());
    auto item = std::make_unique<int>(1);
    CHECK(q.push(item, [] {}) == submission_refusal::closed);
}

TEST_CASE("submission queue: items pushed from several threads keep each thread's order, and none is lost") {
    submissions q;
    REQUIRE(q.start([] {}));
    constexpr int per_thread = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&q, t] {
            for (int i = 0; i < per_thread; ++i) {
                auto item = std::make_unique<int>(t * per_thread + i);
                (void)q.push(item, [] {});
            }
        });
    std::vector<std::unique_ptr<int>> all;
    std::vector<std::unique_ptr<int>> batch;
    while (all.size() < 2 * per_thread) {
        q.drain_into(batch);
        for (auto& i : batch) all.push_back(std::move(i));
        batch.clear();
        std::this_thread::yield();
    }
    for (auto& t : threads) t.join();
    q.drain_into(batch);
    CHECK(batch.empty());
    int last[2] = {-1, -1};
    bool in_order = true;
    for (const auto& i : all) {
        const int t = *i / per_thread;
        in_order = in_order && *i > last[t];
        last[t] = *i;
    }
    CHECK(in_order);
    CHECK(all.size() == 2 * per_thread);
}
