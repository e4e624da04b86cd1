#include "tcp_segments.hpp"

// <linux/tcp.h>: glibc's <netinet/tcp.h> has an older tcp_info without tcpi_segs_out, and the two
// headers cannot meet in one file (Boost.Asio includes glibc's): so this file stands alone.
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>

namespace zkr::test {

std::uint64_t tcp_segments_sent_to(int port) {
    DIR* fds = ::opendir("/proc/self/fd");
    if (!fds) throw std::runtime_error("cannot list /proc/self/fd");
    std::uint64_t total = 0;
    std::set<ino_t> seen;
    while (const dirent* e = ::readdir(fds)) {
        const int fd = std::atoi(e->d_name);
        struct ::stat st {};
        if (fd <= 2 || fd == ::dirfd(fds) || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 || peer.sin_family != AF_INET ||
            ntohs(peer.sin_port) != port || !seen.insert(st.st_ino).second)
            continue;
        tcp_info info{};
        socklen_t info_len = sizeof info;
        if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0) continue;  // closed meanwhile
        total += info.tcpi_segs_out;
    }
    ::closedir(fds);
    return total;
}

}  // namespace zkr::test
