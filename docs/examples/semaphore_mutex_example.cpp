// A mutex that a worker thread releases after the thread that took it hands the work over:
// interprocess_semaphore_mutex may be released by any thread of the process.
// Usage: semaphore_mutex_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <thread>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::interprocess_semaphore_mutex export_lock(client, "/exports/lock");
    if (!export_lock.try_lock_for(std::chrono::seconds(5))) {
        std::cout << "another process is exporting\n";
        return 0;
    }
    const auto token = export_lock.fencing_token();
    std::thread worker([&] {
        std::cout << "exporting with fencing token " << token << '\n';
        export_lock.unlock();  // released by the worker, not the thread that locked
    });
    worker.join();
    // Not re-entrant: locking twice from one thread would wait for ourselves, so use a timeout
    // when a path might do that.
    return 0;
}
