// Jobs for a scarce resource served first come, first served, with the queue shown.
// Usage: fair_lock_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <thread>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::fair_lock gpu(client, "/resources/gpu0");
    std::thread reporter([&] {
        for (int i = 0; i < 5 && !gpu.is_held(); ++i) {
            if (auto pos = gpu.queue_position()) std::cout << *pos << " ahead of us\n";
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
    gpu.lock();
    reporter.join();
    std::cout << "our turn (queue length " << gpu.queue_length() << ")\n";
    gpu.unlock();
    return 0;
}
