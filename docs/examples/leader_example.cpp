// Exactly one active instance: a leader_latch for a service that stays leader until it leaves, and
// a leader_selector that runs one job per term and passes leadership on.
// Usage: leader_example HOST:PORT
#include <zkr/zkr.hpp>

#include <atomic>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client first(options), second(options);  // two participants, as two processes would be
    for (auto* c : {&first, &second}) {
        c->start();
        if (!c->block_until_connected(std::chrono::seconds(10))) return 1;
    }

    // A latch: lead until close(); stop working when the term ends (its stop token).
    zkr::leader_latch a(first, "/example/scheduler", "scheduler-a"), b(second, "/example/scheduler", "scheduler-b");
    a.start();
    a.await_leadership();
    b.start();
    std::cout << "leader: " << a.leader() << ", epoch " << a.fencing_token() << '\n';
    a.close();  // b takes over, woken alone
    b.await_leadership();
    std::cout << "leader: " << b.leader() << ", epoch " << b.fencing_token() << " (higher)\n";
    b.close();

    // A selector: each term runs the function on its own thread; returning hands leadership on.
    std::atomic<int> terms{0};
    auto job = [&](const char* who) {
        return [&terms, who](std::stop_token stop) {
            if (stop.stop_requested()) return;  // lost before it began: do nothing
            std::cout << who << " runs the nightly job\n";
            ++terms;
        };
    };
    zkr::leader_selector s1(first, "/example/nightly", job("first")), s2(second, "/example/nightly", job("second"));
    s1.start();
    s2.start();
    while (terms < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return 0;
}
