// A standalone ZooKeeper server for `zkr demo` when no --connect is given: the Debian zookeeper
// package's server, run by java in a temporary directory on a free loopback port.
#pragma once

#include <sys/types.h>

#include <string>

namespace zkr::cli {

class embedded_server {
public:
    /// Starts the server and waits until it serves; throws std::runtime_error saying why not.
    embedded_server();
    /// Stops the server and removes its directory.
    ~embedded_server();
    embedded_server(const embedded_server&) = delete;
    embedded_server& operator=(const embedded_server&) = delete;

    const std::string& connect_string() const noexcept { return connect_; }

private:
    std::string dir_;
    std::string connect_;
    pid_t pid_ = -1;
};

}  // namespace zkr::cli
