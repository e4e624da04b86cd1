// A resource outside ZooKeeper that refuses stale holders: a file holding
// "<highest token> <accepted writes> <value>", changed under flock(2). Any access with a token
// lower than the highest seen is refused; an accepted access raises the highest token to its own.
// This is what docs/recipes.md asks a protected resource to do.
//
// A read registers its token too: a holder's read-modify-write must not interleave with a newer
// holder's. The fault suite found why (nemesis 5): with tokens checked on writes only, a holder
// whose session is expired between its read and its write still has the highest token the store
// has seen when it writes, the next holder reads the same value, and one update is lost. So a
// resource that is read, then written, must see the token on the read (or make the update one
// conditional operation); docs/recipes.md says so.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace zkr::test {

struct fenced_state {
    std::int64_t highest_token = -1;
    long count = 0;  ///< accepted writes
    long value = 0;
};

namespace detail {

inline fenced_state parse_fenced(int fd) {
    fenced_state s;
    char buf[128] = {};
    if (::pread(fd, buf, sizeof buf - 1, 0) > 0) {
        long long token = -1;
        long count = 0, value = 0;
        const int n = std::sscanf(buf, "%lld %ld %ld", &token, &count, &value);
        if (n >= 2) s = {token, count, n == 3 ? value : 0};
    }
    return s;
}

inline bool store_fenced(int fd, const fenced_state& s) {
    const std::string out = std::to_string(s.highest_token) + " " + std::to_string(s.count) + " " +
                            std::to_string(s.value) + "\n";
    return ::ftruncate(fd, 0) == 0 && ::pwrite(fd, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size());
}

/// Runs f(state&) -> bool under the store's exclusive lock; writes the state back when f says so.
template <typename F>
bool with_fenced(const std::string& file, F&& f) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    ::flock(fd, LOCK_EX);
    fenced_state s = parse_fenced(fd);
    const bool ok = f(s) && store_fenced(fd, s);
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return ok;
}

}  // namespace detail

/// Reads the store (under its lock), without a token.
inline fenced_state read_fenced(const std::string& file) {
    fenced_state s;
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return s;
    ::flock(fd, LOCK_SH);
    s = detail::parse_fenced(fd);
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return s;
}

/// One write with a fencing token: true if accepted (token >= the highest seen), false if refused.
inline bool fenced_write(const std::string& file, std::int64_t token) {
    return detail::with_fenced(file, [&](fenced_state& s) {
        if (token < s.highest_token) return false;
        s.highest_token = token;
        ++s.count;
        return true;
    });
}

/// A read with a fencing token: the value, or nothing if the token is stale.
inline std::optional<long> fenced_read(const std::string& file, std::int64_t token) {
    std::optional<long> value;
    detail::with_fenced(file, [&](fenced_state& s) {
        if (token < s.highest_token) return false;
        s.highest_token = token;
        value = s.value;
        return true;
    });
    return value;
}

/// Sets the value with a fencing token: true if accepted.
inline bool fenced_update(const std::string& file, std::int64_t token, long value) {
    return detail::with_fenced(file, [&](fenced_state& s) {
        if (token < s.highest_token) return false;
        s.highest_token = token;
        s.value = value;
        ++s.count;
        return true;
    });
}

}  // namespace zkr::test
