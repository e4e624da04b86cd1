// The name prefix of a protected create's node: "_c_" + a random UUID's 36 characters + "-", as
// Curator's ProtectedUtils writes and recognises it (it checks the length, 40, and the '-' at 39).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace zkr::detail {

/// "_c_xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-" from 128 random bits (lowercase hex). Written by
/// hand: snprintf took about 3,000 instructions, a twentieth of a lock cycle's client work.
inline std::string format_protect_prefix(std::uint64_t high, std::uint64_t low) {
    std::string out = "_c_00000000-0000-0000-0000-000000000000-";
    constexpr char digits[] = "0123456789abcdef";
    // The 32 hex digits' places, most significant first (the dashes stay where they are).
    std::size_t at = out.size() - 2;
    const auto put = [&](std::uint64_t bits) {
        for (int i = 0; i < 16; ++i, bits >>= 4) {
            if (out[at] == '-') --at;
            out[at--] = digits[bits & 15];
        }
    };
    put(low);
    put(high);
    return out;
}

/// `path` with `prefix` before its node's name ("/a/b" -> "/a/<prefix>b"), in one allocation.
inline std::string with_protect_prefix(std::string_view path, std::string_view prefix) {
    const auto name_at = path.rfind('/') + 1;
    std::string out;
    out.reserve(path.size() + prefix.size());
    out.append(path.substr(0, name_at)).append(prefix).append(path.substr(name_at));
    return out;
}

/// A random UUID's 36 characters (lowercase hex, dashed), as Curator names its members and ids.
inline std::string random_uuid() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const std::uint64_t high = rng(), low = rng();
    return format_protect_prefix(high, low).substr(3, 36);  // (without "_c_" and the last '-')
}

}  // namespace zkr::detail
