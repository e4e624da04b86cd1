// The faults of the separate-process nemesis tests (cache_fault_test, member_fault_test): client
// processes reach the servers through one TCP proxy each, and a nemesis acts on the servers, the
// proxies and the processes, one fault at a time.
#pragma once

#include "process.hpp"
#include "tcp_proxy.hpp"
#include "zk_cluster.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace zkr::test {

/// A TCP proxy before each server, and the connect string through them.
struct proxied_servers {
    std::vector<std::unique_ptr<tcp_proxy>> proxies;
    std::string connect_string;

    explicit proxied_servers(zk_cluster& zk) {
        for (int i = 0; i < zk.size(); ++i) {
            proxies.push_back(std::make_unique<tcp_proxy>(zk.client_port(i)));
            if (i) connect_string += ',';
            connect_string += "127.0.0.1:";  // (appended: GCC 12 at -O3 warns falsely on a sum here)
            connect_string += std::to_string(proxies.back()->port());
        }
    }
};

/// A fault run's seed: ZKR_FAULT_SEED when set (to replay a failed run's faults), else a random
/// one. The run's timing is not replayed: the same seed gives the same faults, in the same order.
inline std::uint32_t nemesis_seed() {
    const char* v = std::getenv("ZKR_FAULT_SEED");
    return v && *v ? static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10)) : std::random_device{}();
}

/// The kinds of fault process_fault injects: 0 a server killed with -9 and restarted (the
/// ensemble's leader in half the cases), 1 every connection reset, 2 the proxies blackholed
/// briefly, 3 blackholed past the session timeout (the processes' sessions expire), 4 a process
/// paused past its session timeout.
inline constexpr int process_fault_kinds = 5;

/// Injects one fault of `kind` (see above) and says which, once it is over.
inline std::string process_fault(int kind, zk_cluster& zk, proxied_servers& net, std::vector<child_process>& processes,
                                 std::chrono::milliseconds session, std::mt19937& rng) {
    const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    switch (kind) {
        case 0: {
            int s = zk.size() > 1 && pick(2) == 0 ? zk.leader() : -1;
            if (s < 0) s = static_cast<int>(pick(static_cast<std::size_t>(zk.size())));
            zk.kill(s);
            std::this_thread::sleep_for(std::chrono::milliseconds(300 + pick(1500)));
            zk.start(s);
            std::string said = "kill -9 server ";  // (appended: GCC 12 at -O3 warns falsely on a sum here)
            said += std::to_string(s);
            return said;
        }
        case 1:
            for (auto& p : net.proxies) p->reset_all();
            return "reset every connection";
        case 2:
        case 3: {
            const bool past = kind == 3;
            for (auto& p : net.proxies) p->blackhole(true);
            std::this_thread::sleep_for(past ? session + std::chrono::seconds(1) : session / 4);
            for (auto& p : net.proxies) p->blackhole(false);
            return past ? "blackhole past the session timeout" : "blackhole briefly";
        }
        default: {
            const auto c = pick(processes.size());
            processes[c].kill(SIGSTOP);
            std::this_thread::sleep_for(session + std::chrono::seconds(1));
            processes[c].kill(SIGCONT);
            std::string said = "pause process ";
            said += std::to_string(c);
            said += " past its session timeout";
            return said;
        }
    }
}

/// Every kind of process_fault once, in a random order, then random ones until go_on() says
/// no, with a pause of 200 to 800 ms after each; says what each fault was, in order.
template <typename GoOn>
std::vector<std::string> process_faults_while(GoOn go_on, zk_cluster& zk, proxied_servers& net, std::vector<child_process>& processes,
                                              std::chrono::milliseconds session, std::mt19937& rng) {
    std::vector<int> kinds(process_fault_kinds);
    for (int k = 0; k < process_fault_kinds; ++k) kinds[static_cast<std::size_t>(k)] = k;
    std::shuffle(kinds.begin(), kinds.end(), rng);
    std::vector<std::string> faults;
    for (std::size_t n = 0; n < kinds.size() || go_on(); ++n) {
        const int kind = n < kinds.size() ? kinds[n] : static_cast<int>(rng() % process_fault_kinds);
        faults.push_back(process_fault(kind, zk, net, processes, session, rng));
        std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 600));
    }
    return faults;
}

}  // namespace zkr::test
