// The name prefix of a protected create's node: "_c_" + a random UUID's 36 characters + "-", as
// Curator's ProtectedUtils writes and recognises it (it checks the length, 40, and the '-' at 39).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace zkr::detail {

/// Its length: "_c_", a UUID's 36 characters, "-".
inline constexpr std::size_t protect_prefix_size = 40;

/// "_c_xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-" from 128 random bits (lowercase hex), written into
/// out's 40 characters. Written by hand: snprintf took about 3,000 instructions, a twentieth of a
/// lock cycle's client work.
inline void write_protect_prefix(std::uint64_t high, std::uint64_t low, char* out) {
    constexpr std::string_view blank = "_c_00000000-0000-0000-0000-000000000000-";
    std::copy(blank.begin(), blank.end(), out);
    constexpr char digits[] = "0123456789abcdef";
    // The 32 hex digits' places, most significant first (the dashes stay where they are).
    std::size_t at = protect_prefix_size - 2;
    const auto put = [&](std::uint64_t bits) {
        for (int i = 0; i < 16; ++i, bits >>= 4) {
            if (out[at] == '-') --at;
            out[at--] = digits[bits & 15];
        }
    };
    put(low);
    put(high);
}

/// A protected create's prefix, kept inside the operation (no allocation per create): none, or
/// its 40 characters.
class protect_prefix {
public:
    /// A new random one.
    static protect_prefix make() {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        const std::uint64_t high = rng(), low = rng();
        protect_prefix p;
        write_protect_prefix(high, low, p.chars_.data());
        p.set_ = true;
        return p;
    }
    std::string_view view() const noexcept { return set_ ? std::string_view(chars_.data(), chars_.size()) : std::string_view(); }

private:
    std::array<char, protect_prefix_size> chars_{};
    bool set_ = false;
};

/// `path` with `prefix` before its node's name ("/a/b" -> "/a/<prefix>b"), written over out (whose
/// capacity is kept: a buffer used again allocates nothing once it has grown).
inline void write_with_protect_prefix(std::string_view path, std::string_view prefix, std::string& out) {
    const auto name_at = path.rfind('/') + 1;
    out.clear();
    out.reserve(path.size() + prefix.size());
    out.append(path.substr(0, name_at)).append(prefix).append(path.substr(name_at));
}

/// A random UUID's 36 characters (lowercase hex, dashed), as Curator names its members and ids.
inline std::string random_uuid() {
    return std::string(protect_prefix::make().view().substr(3, 36));  // (without "_c_" and the last '-')
}

}  // namespace zkr::detail
