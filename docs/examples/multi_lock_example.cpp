// A transfer between two accounts under both accounts' locks, taken all or nothing in one global
// order (two transfers in opposite directions never deadlock); and a revocable lock whose holder is
// asked to let go.
// Usage: multi_lock_example HOST:PORT
#include <zkr/zkr.hpp>

#include <iostream>
#include <mutex>
#include <thread>

int main(int argc, char** argv) {
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    {
        zkr::interprocess_multi_lock both(client, {"/example/accounts/42", "/example/accounts/7"});
        std::scoped_lock guard(both);  // path order: /example/accounts/42, then /example/accounts/7
        const auto tokens = both.fencing_tokens();
        std::cout << "moving money from 42 to 7 under tokens " << tokens[0] << " and " << tokens[1] << '\n';
    }

    std::stop_source wind_down;
    zkr::interprocess_mutex report(client, "/example/report", [&] { wind_down.request_stop(); });
    report.lock();
    zkr::revoke(client, "/example/report");  // another process would do this (or `zkr revoke`)
    while (!report.stop_token().stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::cout << "asked to let go; still " << zkr::to_string(report.state()) << ", releasing\n";
    report.unlock();
    return wind_down.stop_requested() ? 0 : 1;
}
