// How a node of a queue whose grants are marked (lock_rule::grants_marked) says it holds: its own
// data followed by a mark no text editor writes. A waiter recognises the grant by the data it
// reads, never by the write alone: a version above 0 or a data change may be anyone's (an
// operator's, a revoker's), and under a shrinking limit a write taken for a grant makes one
// holder too many (found by the simulation, seed 28548085651).
#pragma once

#include <string>
#include <string_view>

namespace zkr::detail {

// A NUL byte first: no zkCli.sh set, no `zkr` command and no revocation request writes it.
inline constexpr std::string_view grant_mark{"\0zkr:granted", 12};

inline bool has_grant_mark(std::string_view data) noexcept {
    return data.size() >= grant_mark.size() && data.substr(data.size() - grant_mark.size()) == grant_mark;
}

inline std::string with_grant_mark(std::string_view data) {
    std::string marked(data);
    if (!has_grant_mark(data)) marked += grant_mark;
    return marked;
}

// What the node says of its holder, as it was created (for `zkr status` and participant lists).
inline std::string_view without_grant_mark(std::string_view data) noexcept {
    return has_grant_mark(data) ? data.substr(0, data.size() - grant_mark.size()) : data;
}

}  // namespace zkr::detail
