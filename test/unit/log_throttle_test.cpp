// The C client's repeating log lines, held back (no server needed).
#include "log_throttle.hpp"

#include "zkr_catch.hpp"

using namespace std::chrono_literals;

TEST_CASE("log throttle: an outage's two alternating lines are logged once per window, then with a count") {
    zkr::detail::log_throttle t(30s);
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    const std::string err = "2026-11-24 15:00:00,123:4242(0x7f01):ZOO_ERROR@handle_socket_error_msg@1290: Socket [127.0.0.1:%d] zk retcode=-4, errno=111";
    const std::string warn = "2026-11-24 15:00:00,124:4242(0x7f01):ZOO_WARN@zookeeper_interest@2100: Exceeded deadline by %dms";
    auto fill = [](std::string s, int n) { return s.replace(s.find("%d"), 2, std::to_string(n)); };
    int logged = 0;
    for (int i = 0; i < 450; ++i) {  // 30 s of attempts every 66 ms
        const auto now = t0 + i * 66ms;
        logged += t.offer(fill(err, 2181 + i % 3), now).log;
        logged += t.offer(fill(warn, i), now).log;
    }
    CHECK(logged == 2);  // one of each, not 900
    const auto later = t.offer(fill(err, 2181), t0 + 31s);
    CHECK(later.log);
    REQUIRE(later.summary);
    CHECK(*later.summary == "449 similar lines held back in the last 31 s");
    CHECK(t.offer("ZOO_INFO@x: a line of another shape", t0 + 31s).log);
}

TEST_CASE("log throttle: the shape leaves out the prefix and the digits") {
    using zkr::detail::log_throttle;
    CHECK(log_throttle::shape("2026-11-24 12:00:00,1:7(0x1):ZOO_WARN@f@12: port 2181") == "ZOO_WARN@f@: port ");
    CHECK(log_throttle::shape("no marker 42") == "no marker ");
}

TEST_CASE("log throttle: lines that come after a pause, as a few connection drops do, are each logged") {
    zkr::detail::log_throttle t(30s);
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    const std::string drop = "ZOO_ERROR@handle_socket_error_msg@1: Socket [127.0.0.1:2181] zk retcode=-7: session timed out";
    int logged = 0;
    for (int i = 0; i < 4; ++i) logged += t.offer(drop, t0 + i * 2500ms).log;
    CHECK(logged == 4);
}
