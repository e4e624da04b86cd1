// A protected resource that rejects stale holders, and a write guarded by lock ownership.
// Usage: fencing_example HOST:PORT
#include <zkr/zkr.hpp>

#include <atomic>
#include <iostream>

// The resource keeps the highest token it has seen and refuses anything older: a holder that was
// paused past its session timeout (and lost the lock meanwhile) cannot overwrite a newer holder.
class fenced_store {
public:
    bool write(std::int64_t token, const std::string& value) {
        std::int64_t seen = highest_.load();
        while (token >= seen) {
            if (highest_.compare_exchange_weak(seen, token)) {
                value_ = value;
                return true;
            }
        }
        return false;  // stale holder
    }

private:
    std::atomic<std::int64_t> highest_{0};
    std::string value_;
};

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    fenced_store store;
    zkr::interprocess_mutex lock(client, "/config/lock");
    lock.acquire();
    if (!store.write(lock.fencing_token(), "new value")) std::cout << "rejected: a newer holder wrote first\n";

    // ZooKeeper data itself: the multi commits only while our lock node exists on our session.
    try {
        lock.guarded_multi({zkr::multi_op::set_data("/config/current", "v2")});
    } catch (const zkr::error& e) {
        std::cout << "not written: " << e.what() << '\n';  // lock_lost, or no_node for the target
    }
    lock.release();
    return 0;
}
