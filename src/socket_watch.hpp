// The Asio side of the C client's socket: readiness waits, and the batches of writes that leave as
// one segment. Asio watches a dup() that zkr owns, never the C client's number: the C client
// closes its own fd when it drops a connection, and the number may be reused at once by another
// thread, so zkr makes no syscall on a number it does not own. The C client may also open a new
// socket under the same number: the inode tells sockets apart. Each socket followed is a new
// generation, and a wait or a batch begun on an earlier one ends without effect.
// Network thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <spdlog/logger.h>

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace zkr::detail {

class socket_watch {
public:
    /// on_ready(events): the socket followed is readable (ZOOKEEPER_READ) or writable
    /// (ZOOKEEPER_WRITE), as a wait asked.
    socket_watch(boost::asio::io_context& io, spdlog::logger& log, std::function<void(int)> on_ready);

    /// Follows fd, the C client's socket now (-1: it has none; a number ask_interest vouched for).
    void follow(int fd);
    /// Lets the socket go (its dup closed; the C client's is the C client's to close).
    void release();
    bool is_open() const noexcept { return socket_.is_open(); }
    /// Arms a wait for each readiness in `interest` (ZOOKEEPER_READ, ZOOKEEPER_WRITE) that has
    /// none armed.
    void wait_for(int interest);
    /// More bytes wait to be read now (the reactor is edge-triggered: the reader loops on it).
    bool readable();
    /// Ends the connection on the shared socket: the C client reads the end and moves on to the
    /// next server. False without a socket.
    bool shut_down();

    /// Holds back the socket's writes until the batch ends, so that they leave as one TCP segment
    /// (see the definition for why). Returns what end_batch needs.
    std::uint64_t begin_batch();
    void end_batch(std::uint64_t batch);

private:
    void wait(bool for_write);

    boost::asio::posix::stream_descriptor socket_;
    spdlog::logger& log_;
    std::function<void(int)> on_ready_;
    ino_t inode_ = 0;
    std::uint64_t generation_ = 0;
    bool read_waiting_ = false;
    bool write_waiting_ = false;
};

}  // namespace zkr::detail
