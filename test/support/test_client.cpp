// What the tests add to zkr::testing: client options for tests and a recorder of connection states.
#include "zk_cluster.hpp"

#include "shared_server.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace zkr::test {


client_options test_options(const std::string& connect_string, std::chrono::milliseconds session_timeout) {
    client_options o;
    o.connect_string = connect_string;
    o.session_timeout = session_timeout;
    o.connection_timeout = std::chrono::seconds(5);
    o.retry_policy = std::make_shared<zkr::exponential_backoff_retry>(std::chrono::milliseconds(50), 5,
                                                                      std::chrono::milliseconds(500));
    static const std::shared_ptr<spdlog::logger> logger = [] {
        auto l = spdlog::stderr_color_mt("zkr-test");
        const char* level = std::getenv("ZKR_TEST_LOG");
        // Quiet by default: the C client logs every refused reconnection attempt as an error.
        l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::off);
        return l;
    }();
    o.logger = logger;
    return o;
}

struct state_recorder::shared {
    mutable std::mutex m;
    mutable std::condition_variable cv;
    std::vector<connection_state> states;
};

state_recorder::state_recorder(zkr::client& c) : shared_(std::make_shared<shared>()) {
    subscription_ = c.add_state_listener([s = shared_](connection_state st) {
        std::lock_guard lock(s->m);
        s->states.push_back(st);
        s->cv.notify_all();
    });
}

std::vector<connection_state> state_recorder::states() const {
    std::lock_guard lock(shared_->m);
    return shared_->states;
}

bool state_recorder::wait_for(connection_state s, std::chrono::milliseconds timeout) const {
    return wait_count(s, 1, timeout);
}

bool state_recorder::wait_count(connection_state s, int n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(shared_->m);
    return shared_->cv.wait_for(lock, timeout, [&] {
        return std::count(shared_->states.begin(), shared_->states.end(), s) >= n;
    });
}

void state_recorder::clear() {
    std::lock_guard lock(shared_->m);
    shared_->states.clear();
}

int thread_count() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}
}  // namespace zkr::test
