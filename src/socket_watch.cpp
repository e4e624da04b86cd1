#include "socket_watch.hpp"

#include <zookeeper/zookeeper.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zkr::detail {

socket_watch::socket_watch(boost::asio::io_context& io, spdlog::logger& log, std::function<void(int)> on_ready)
    : socket_(io), log_(log), on_ready_(std::move(on_ready)) {}

void socket_watch::follow(int fd) {
    if (fd < 0) {
        release();
        return;
    }
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {  // vouched for: it is the C client's open socket
        release();
        return;
    }
    if (socket_.is_open() && st.st_ino == inode_) return;
    release();
    if (!S_ISSOCK(st.st_mode)) {  // never: that number is not the C client's socket any more
        log_.error("zookeeper_interest reported fd {}, which is not a socket: not watched", fd);
        return;
    }
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        log_.error("cannot duplicate the ZooKeeper socket: {}", std::strerror(errno));
        return;
    }
    boost::system::error_code ec;
    socket_.assign(own, ec);
    if (ec) {
        ::close(own);
        log_.error("cannot watch the ZooKeeper socket: {}", ec.message());
        return;
    }
    inode_ = st.st_ino;
}

void socket_watch::release() {
    if (socket_.is_open()) {
        boost::system::error_code ec;
        socket_.close(ec);  // our dup
    }
    ++generation_;
    read_waiting_ = write_waiting_ = false;
}

void socket_watch::wait_for(int interest) {
    if (!socket_.is_open()) return;
    if ((interest & ZOOKEEPER_READ) && !read_waiting_) wait(false);
    if ((interest & ZOOKEEPER_WRITE) && !write_waiting_) wait(true);
}

void socket_watch::wait(bool for_write) {
    (for_write ? write_waiting_ : read_waiting_) = true;
    socket_.async_wait(for_write ? boost::asio::posix::descriptor_base::wait_write
                                 : boost::asio::posix::descriptor_base::wait_read,
                       [this, for_write, gen = generation_](boost::system::error_code ec) {
                           if (gen != generation_) return;
                           (for_write ? write_waiting_ : read_waiting_) = false;
                           if (ec) return;
                           on_ready_(for_write ? ZOOKEEPER_WRITE : ZOOKEEPER_READ);
                       });
}

bool socket_watch::readable() {
    if (!socket_.is_open()) return false;
    pollfd p{socket_.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

bool socket_watch::shut_down() {
    if (!socket_.is_open()) return false;
    // On zkr's dup, never on the C client's number; the shutdown reaches the shared socket, whose
    // read then ends: the C client handles that as any dropped connection.
    ::shutdown(socket_.native_handle(), SHUT_RDWR);
    return true;
}

// The C client writes a request as two send() calls, its length and then its body, on a socket with
// TCP_NODELAY: each left as a segment of its own, and a pipelined pair (a lock's create and
// listing) as four, each for the server to read apart; in the W8 benchmark the server's CPU is
// what runs out first (docs/performance.md). TCP_CORK on zkr's dup (the socket is shared
// with the C client's descriptor) holds the writes of one batch of requests back, and ending the
// batch sends them as one segment, at once: no delay is added, as the batch ends in the same
// handler. The socket's generation is checked at the end: if the socket was let go meanwhile, its
// connection was dropped or the handle is closing, and nothing is written on it any more.
// Returns 0 when nothing was corked; else the generation plus one.
std::uint64_t socket_watch::begin_batch() {
    if (!socket_.is_open()) return 0;
    const int on = 1;
    if (::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on) != 0) return 0;
    return generation_ + 1;
}

void socket_watch::end_batch(std::uint64_t batch) {
    if (batch == 0 || batch != generation_ + 1 || !socket_.is_open()) return;
    const int off = 0;
    ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &off, sizeof off);
}

}  // namespace zkr::detail
