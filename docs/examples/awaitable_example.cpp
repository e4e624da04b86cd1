// Acquiring a lock in a coroutine with use_awaitable.
// Usage: awaitable_example HOST:PORT
#include <zkr/zkr.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>

boost::asio::awaitable<void> work(zkr::client& client, zkr::interprocess_mutex& lock) {
    // The hold belongs to the lock_hold, whichever thread the coroutine resumes on.
    zkr::lock_hold hold = co_await lock.async_acquire(std::chrono::seconds(5), boost::asio::use_awaitable);
    if (!hold) {
        std::cout << "busy\n";
        co_return;
    }
    auto data = co_await client.async_get_data("/config/current", boost::asio::use_awaitable);
    std::cout << "read under the lock (token " << hold.fencing_token() << "): " << data.data << '\n';
    co_await hold.async_release(boost::asio::use_awaitable);
}

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;
    zkr::interprocess_mutex lock(client, "/config/lock");
    boost::asio::io_context io;
    boost::asio::co_spawn(io, work(client, lock), boost::asio::detached);
    io.run();
    return 0;
}
