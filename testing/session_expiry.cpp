// Ending a session on purpose (Curator's KillSession): a second handle takes the session over
// and closes it.
#include "client_hooks.hpp"  // the C client's process-wide lock and a session's credentials (src/)

#include <zkr/testing.hpp>

#include <zookeeper/zookeeper.h>

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace zkr::testing {

namespace {
// Opens a second handle on the session and drives it until the server has answered: connected
// (the session is now this handle's) or expired (it is gone). Closes the handle, and returns its
// state at the answer (anything else: no answer in 20 s).
int take_over_session(const std::string& connect_string, std::int64_t session_id, const std::string& password) {
    clientid_t id{};
    id.client_id = session_id;
    std::memcpy(id.passwd, password.data(), std::min(password.size(), sizeof id.passwd));
    // Its log lines (refused connections, "has expired") are the expected course here: not shown.
    zhandle_t* zh = zookeeper_init2(connect_string.c_str(), nullptr, 10000, &id, nullptr, ZOO_NO_LOG_CLIENTENV,
                                    [](const char*) {});
    if (!zh) throw std::runtime_error("expire_session: zookeeper_init failed");
    // Drive the single-threaded handle until it has taken the session over.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (zoo_state(zh) != ZOO_CONNECTED_STATE && zoo_state(zh) != ZOO_EXPIRED_SESSION_STATE &&
           std::chrono::steady_clock::now() < deadline) {
        int fd = -1, interest = 0;
        timeval tv{};
        zookeeper_interest(zh, &fd, &interest, &tv);
        pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)), 0};
        const int ms = std::min<int>(100, static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000));
        const int n = fd >= 0 ? ::poll(&p, 1, ms) : (std::this_thread::sleep_for(std::chrono::milliseconds(ms)), 0);
        int events = 0;
        if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) events |= ZOOKEEPER_READ;
        if (n > 0 && (p.revents & POLLOUT)) events |= ZOOKEEPER_WRITE;
        zookeeper_process(zh, events);
    }
    const int state = zoo_state(zh);
    zookeeper_close(zh);
    return state;
}
}  // namespace

void expire_session(const std::string& connect_string, std::int64_t session_id, const std::string& password) {
    // Holding the C client's process-wide lock also freezes this process's own clients meanwhile
    // (like a short pause), so the client under test cannot take its session back before it is
    // closed.
    const std::lock_guard lock(zkr::detail::c_client_mutex());
    // The single-threaded close only sends its request and hangs up: it was seen (ZooKeeper 3.9,
    // under load) to leave the session alive, and its owner then took it back and held on. So
    // take it over again until the server answers that it is gone.
    for (int attempt = 0; attempt < 10; ++attempt) {
        const int state = take_over_session(connect_string, session_id, password);
        if (state == ZOO_EXPIRED_SESSION_STATE) return;
        if (state != ZOO_CONNECTED_STATE) break;
    }
    throw std::runtime_error("expire_session: could not end the session");
}

void expire_session(const std::string& connect_string, zkr::client& c) {
    // The client reconnects within milliseconds and may take its session back before the second
    // handle's close arrives (the server then refuses that close: session moved). Repeat until the
    // session is really gone.
    auto [id, password] = zkr::detail::session_credentials(zkr::detail::connection_of(c));
    for (int attempt = 0; attempt < 20; ++attempt) {
        expire_session(connect_string, id, password);
        if (eventually([&, old = id] { return c.session_id() != old || c.state() == connection_state::lost; },
                       std::chrono::milliseconds(1500)))
            return;
    }
    throw std::runtime_error("expire_session: the session survived 20 attempts");
}

void cluster::expire_session(zkr::client& c) const { zkr::testing::expire_session(connect_string(), c); }

}  // namespace zkr::testing
