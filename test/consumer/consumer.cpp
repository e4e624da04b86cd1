// A user's first program against the installed zkr: a lock cycle and a lease.
// Usage: consumer HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: consumer HOST:PORT\n";
        return 2;
    }
    zkr::client_options options;
    options.connect_string = argv[1];
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;
    zkr::interprocess_mutex lock(client, "/consumer/lock");
    {
        std::scoped_lock guard(lock);
        std::cout << "locked, fencing token " << lock.fencing_token() << '\n';
    }
    zkr::interprocess_semaphore_v2 semaphore(client, "/consumer/semaphore", 2);
    auto lease = semaphore.acquire();
    std::cout << "leased " << lease.node_name() << '\n';
    return 0;
}
