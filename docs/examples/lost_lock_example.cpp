// A holder that reacts to doubt and loss: the safe pattern.
// Usage: lost_lock_example HOST:PORT
#include <zkr/zkr.hpp>

#include <atomic>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::interprocess_mutex lock(client, "/leader/lock");
    std::atomic<bool> may_act{false};
    // Runs on the client's callback thread; keep it short.
    auto subscription = lock.add_hold_listener([&](zkr::hold_state s) {
        may_act = (s == zkr::hold_state::held);
        if (s == zkr::hold_state::doubtful) std::cout << "connection suspended: pausing work\n";
        if (s == zkr::hold_state::lost) std::cout << "lock lost: stopping for good\n";
    });
    lock.acquire();
    may_act = true;
    for (int step = 0; step < 10; ++step) {
        // Check before every step that must not run twice; the fencing token covers the race
        // between this check and the step itself.
        if (!may_act || !lock.is_valid()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (lock.state() == zkr::hold_state::lost) return 1;
    lock.release();
    return 0;
}
