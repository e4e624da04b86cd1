// A long job that stops by itself when its lock is lost: the hold's std::stop_token.
// Usage: stop_token_example HOST:PORT
//
// The job runs in a std::jthread given lock.stop_token(). Its stop is requested as soon as the
// hold ends: the session expired (a long GC pause, a VM stall), the node was deleted or written by
// someone else, or the client was closed. Leaving the std::scoped_lock afterwards is safe: unlock()
// never throws, and never waits for a server that is not there. To show it without waiting for a
// real outage, a second client deletes the lock node halfway through, as an operator might.
#include <zkr/zkr.hpp>

#include <chrono>
#include <iostream>
#include <mutex>
#include <stop_token>
#include <thread>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(10s)) return 1;

    zkr::interprocess_mutex lock(client, "/reports/nightly");
    int steps_done = 0;
    bool stopped_by_loss = false;
    {
        std::scoped_lock guard(lock);
        std::jthread job([&, token = lock.stop_token()] {
            for (int step = 0; step < 1000; ++step) {
                if (token.stop_requested()) {  // the hold ended: do not start another step
                    stopped_by_loss = true;
                    return;
                }
                std::this_thread::sleep_for(10ms);  // one step of the job
                ++steps_done;
            }
        });

        // The demonstration's fault: someone else deletes our lock node.
        std::this_thread::sleep_for(300ms);
        zkr::client other(options);
        other.start();
        if (!other.block_until_connected(10s)) return 1;
        other.remove(lock.node_path());

        job.join();  // ends by itself, long before its 1000 steps
        std::cout << "lock " << to_string(lock.state()) << " after " << steps_done << " steps: the job stopped by itself\n";
    }  // unlock(): the hold is already gone; it logs that and returns
    return stopped_by_loss && steps_done < 1000 ? 0 : 1;
}
