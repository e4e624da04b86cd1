// At most 3 workers, across every process, call a rate-limited gateway at once; a batch job takes
// 2 of the 3 slots at once (all or nothing). The maximum lives in a shared count, so an operator
// can raise it while the workers run.
// Usage: semaphore_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::shared_count gateway_slots(client, "/gateway/max-calls", 3);  // created with 3 if missing
    zkr::interprocess_semaphore_v2 gateway(client, "/gateway/calls", gateway_slots);

    {
        std::optional<zkr::lease> slot = gateway.acquire(std::chrono::seconds(5));
        if (!slot) {
            std::cout << "gateway busy, try later\n";
            return 0;
        }
        std::cout << "calling the gateway with fencing token " << slot->fencing_token() << '\n';
        // ... the call; slot->is_valid() says whether the lease still holds ...
    }  // the lease returns here

    std::vector<zkr::lease> batch = gateway.acquire_many(2);  // two slots, all or nothing, in turn
    std::cout << "batch holds " << batch.size() << " slots of " << gateway.max_leases() << '\n';
    for (auto& lease : batch) lease.close();  // close() reports errors; the destructor only logs

    gateway_slots.set_count(4);  // every process's semaphore now allows 4
    return 0;
}
