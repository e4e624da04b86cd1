// A configuration that many processes read and one at a time rewrites: readers share the lock, a
// writer holds it alone, and a writer that must keep reading what it wrote downgrades.
// Usage: read_write_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <mutex>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    const std::string config = "/example/config";
    zkr::interprocess_read_write_lock lock(client, "/example/config-lock");
    {
        std::unique_lock write(lock.write_lock());  // alone: no reader, no other writer
        boost::system::error_code ec;
        client.create(config, "v1", {.mode = zkr::create_mode::persistent, .create_parents = true}, ec);
        lock.write_lock().guarded_multi({zkr::multi_op::set_data(config, "v2")});  // commits only while we hold
        // Downgrade: take the read lock (at once: it sits behind our own writer), then let the
        // write lock go. Readers may join us now; no waiting writer can pass us.
        std::scoped_lock read(lock.read_lock());
        write.unlock();
        std::cout << "wrote and still reading: " << client.get_data(config).data << '\n';
    }
    {
        std::scoped_lock read(lock.read_lock());  // shared with other readers
        std::cout << "read: " << client.get_data(config).data << " (fencing token " << lock.read_lock().fencing_token() << ")\n";
    }
    client.remove(config);
    return 0;
}
