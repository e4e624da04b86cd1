#include <zkr/path.hpp>

#include <algorithm>
#include <array>
#include <string>

namespace zkr {

namespace {

// The bytes a rule is about: the control characters, DEL, and 0xc2 (the lead byte of U+0080-U+009F).
constexpr std::array<bool, 256> rule_bytes = [] {
    std::array<bool, 256> t{};
    for (std::size_t c = 0; c < 0x20; ++c) t[c] = true;
    t[0x7f] = t[0xc2] = true;
    return t;
}();

// Every request checks its path (issue 48: the full check below cost 411 instructions a call, and
// a loop of comparisons per byte still 330 for 19 bytes). The usual path, plain names and no byte
// a rule is about, passes here; anything else (the root, a dot segment, a control byte, a 0xc2
// lead byte) gets the full check, which says what is wrong.
bool plainly_valid(std::string_view path) noexcept {
    if (path.size() < 2 || path.front() != '/' || path.back() == '/') return false;
    // No byte a rule is about: a table, without branches (comparisons cost 13 instructions a byte).
    bool special = false;
    for (const char ch : path) special |= rule_bytes[static_cast<unsigned char>(ch)];
    if (special) return false;
    // No empty, "." or ".." segment (memchr from one '/' to the next).
    for (std::size_t start = 1; start < path.size();) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        const std::size_t length = end - start;
        if (length == 0 || (length <= 2 && path[start] == '.' && path[end - 1] == '.')) return false;
        start = end + 1;
    }
    return true;
}

}  // namespace

std::optional<std::string> path_error(std::string_view path) {
    if (plainly_valid(path)) return std::nullopt;
    if (path.empty()) return "path is empty; a znode path starts with '/', e.g. \"/locks/job\"";
    if (path.front() != '/') return "path must start with '/', e.g. \"/locks/job\"";
    if (path.size() == 1) return std::nullopt;
    if (path.back() == '/') return "path must not end with '/' (only the root \"/\" may)";
    std::size_t start = 1;
    while (start <= path.size()) {
        const std::size_t end = std::min(path.find('/', start), path.size());
        const std::string_view segment = path.substr(start, end - start);
        if (segment.empty()) return "path has an empty segment (\"//\"); segments are separated by one '/'";
        if (segment == "." || segment == "..")
            return "path has a relative segment \"" + std::string(segment) + "\"; '.' and '..' are not allowed";
        start = end + 1;
    }
    for (std::size_t i = 0; i < path.size(); ++i) {
        const auto c = static_cast<unsigned char>(path[i]);
        if (c == 0) return "path contains a NUL character at offset " + std::to_string(i);
        if (c < 0x20 || c == 0x7f)
            return "path contains the control character 0x" + std::string(1, "0123456789abcdef"[c >> 4]) +
                   std::string(1, "0123456789abcdef"[c & 15]) + " at offset " + std::to_string(i);
        // U+0080-U+009F encoded in UTF-8 as C2 80..C2 9F: C1 control characters.
        if (c == 0xc2 && i + 1 < path.size()) {
            const auto d = static_cast<unsigned char>(path[i + 1]);
            if (d >= 0x80 && d <= 0x9f)
                return "path contains a C1 control character at offset " + std::to_string(i);
        }
    }
    return std::nullopt;
}

std::optional<std::string> node_name_error(std::string_view name) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos)
        return "it must be one node name (not empty, no '/', not \".\" or \"..\")";
    if (auto e = path_error(std::string("/").append(name))) return e;
    return std::nullopt;
}

std::string join_path(std::string_view parent, std::string_view child) {
    std::string out;
    out.reserve(parent.size() + 1 + child.size());  // one allocation (a lock takes a few per cycle)
    out += parent;
    if (out.empty() || out.back() != '/') out += '/';
    out += child;
    return out;
}

std::string_view parent_path(std::string_view path) {
    const auto slash = path.rfind('/');
    if (slash == 0 || slash == std::string_view::npos) return "/";
    return path.substr(0, slash);
}

std::string_view node_name(std::string_view path) {
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string printable_path(std::string_view path) {
    std::string out;
    for (const unsigned char ch : path) {
        if (ch >= 0x20 && ch != 0x7f) {
            out += static_cast<char>(ch);
            continue;
        }
        out += "\\x";
        out += "0123456789abcdef"[ch >> 4];
        out += "0123456789abcdef"[ch & 15];
    }
    return out;
}

}  // namespace zkr
