// A two's-complement integer as big-endian bytes, as Java's DataOutput writes it: the formats of
// Curator's SharedCount (4 bytes) and DistributedAtomicLong (8 bytes).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace zkr::detail {

/// The sizeof(T) bytes of value, most significant first.
template <typename T>
std::string big_endian_bytes(T value) {
    static_assert(std::is_integral_v<T> && sizeof(T) >= 4);
    const auto bits = static_cast<std::make_unsigned_t<T>>(value);
    std::string out(sizeof(T), '\0');
    for (std::size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>(bits >> 8 * (sizeof(T) - 1 - i));
    return out;
}

/// The value exactly sizeof(T) bytes hold, most significant first; nullopt for any other length.
template <typename T>
std::optional<T> from_big_endian_bytes(std::string_view data) {
    static_assert(std::is_integral_v<T> && sizeof(T) >= 4);
    if (data.size() != sizeof(T)) return std::nullopt;
    std::make_unsigned_t<T> bits = 0;
    for (const char c : data) bits = (bits << 8) | static_cast<unsigned char>(c);
    return static_cast<T>(bits);
}

}  // namespace zkr::detail
