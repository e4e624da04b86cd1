// A first look at zkr: connect, watch, create and read nodes, and see the connection states.
// Usage: zkr_demo HOST:PORT
#include <zkr/zkr.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/use_future.hpp>

#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: zkr_demo HOST:PORT\n";
        return 2;
    }
    try {
        zkr::client_options options;
        options.connect_string = argv[1];
        options.session_timeout = std::chrono::seconds(10);
        options.name_space = "zkr-demo";
        options.logger = spdlog::stdout_color_mt("zkr");
        options.logger->set_level(spdlog::level::warn);
        zkr::client client(options);
        auto subscription = client.add_state_listener(
            [](zkr::connection_state s) { std::cout << "  [state] " << zkr::to_string(s) << '\n'; });
        client.start();
        if (!client.block_until_connected(std::chrono::seconds(10))) {
            std::cerr << "could not connect to " << argv[1] << '\n';
            return 1;
        }
        std::cout << "connected: session 0x" << std::hex << client.session_id() << std::dec << ", timeout "
                  << client.negotiated_session_timeout().count() << " ms\n";

        // A one-shot watch on a node that does not exist yet.
        std::promise<zkr::watch_event> fired;
        client.exists("/greeting", [&](const zkr::watch_event& e) { fired.set_value(e); });

        client.create("/greeting", "hello from zkr", {.mode = zkr::create_mode::ephemeral});
        auto event = fired.get_future().get();
        std::cout << "watch fired: " << zkr::to_string(event.type) << ' ' << event.path << '\n';

        // The same operations, asynchronously, with std::future.
        auto data = client.async_get_data("/greeting", boost::asio::use_future).get();
        std::cout << "read back: \"" << data.data << "\" (czxid " << data.stat.czxid << ")\n";

        // Sequential ephemeral nodes under a container parent created on demand: the raw material
        // of zkr's locks.
        for (int i = 0; i < 3; ++i) {
            auto r = client.create("/queue/item-", std::to_string(i),
                                   {.mode = zkr::create_mode::ephemeral_sequential, .create_parents = true});
            std::cout << "created " << r.path << " (fencing token " << r.stat.czxid << ")\n";
        }
        auto children = client.get_children("/queue");
        std::cout << "/queue has " << children.children.size() << " children\n";

        // Bad input is rejected before anything is sent, with a message saying why.
        try {
            client.create("relative/path");
        } catch (const zkr::error& e) {
            std::cout << "rejected as expected: " << e.what() << '\n';
        }
        client.close();
        std::cout << "closed; the ephemeral nodes are gone with the session.\n\n";

        // Three sessions queue on one fair lock and take it in turn, each with a higher fencing token.
        std::cout << "three sessions take a fair lock in turn:\n";
        std::mutex out;
        std::vector<std::thread> workers;
        for (int w = 0; w < 3; ++w) {
            workers.emplace_back([&, w] {
                zkr::client session(options);
                session.start();
                if (!session.block_until_connected(std::chrono::seconds(10))) return;
                zkr::fair_lock lock(session, "/demo/fair");
                for (int turn = 0; turn < 2; ++turn) {
                    std::scoped_lock guard(lock);
                    {
                        std::lock_guard l(out);
                        std::cout << "  session " << w << " holds the lock, fencing token " << lock.fencing_token() << '\n';
                    }
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
                }
            });
        }
        for (auto& t : workers) t.join();
        std::cout << "Demo done. More: docs/recipes.md\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "demo failed: " << e.what() << '\n';
        return 1;
    }
}
