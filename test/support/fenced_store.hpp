// A resource outside ZooKeeper that refuses stale holders: a file holding "<highest token> <count>",
// updated under flock(2). A write with a token lower than the highest seen is rejected; the others
// raise the count. This is what docs/recipes.md asks a protected resource to do.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace zkr::test {

struct fenced_state {
    std::int64_t highest_token = -1;
    long count = 0;
};

/// Reads the store (under its lock).
inline fenced_state read_fenced(const std::string& file) {
    fenced_state s;
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return s;
    ::flock(fd, LOCK_SH);
    char buf[128] = {};
    const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) {
        long long token = -1;
        long count = 0;
        if (std::sscanf(buf, "%lld %ld", &token, &count) == 2) s = {token, count};
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return s;
}

/// One write with a fencing token: true if accepted (token >= the highest seen), false if refused.
inline bool fenced_write(const std::string& file, std::int64_t token) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    ::flock(fd, LOCK_EX);
    char buf[128] = {};
    fenced_state s;
    if (::pread(fd, buf, sizeof buf - 1, 0) > 0) {
        long long t = -1;
        long c = 0;
        if (std::sscanf(buf, "%lld %ld", &t, &c) == 2) s = {t, c};
    }
    const bool accepted = token >= s.highest_token;
    if (accepted) {
        const std::string out = std::to_string(token) + " " + std::to_string(s.count + 1) + "\n";
        if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) {
            ::flock(fd, LOCK_UN);
            ::close(fd);
            return false;
        }
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return accepted;
}

}  // namespace zkr::test
