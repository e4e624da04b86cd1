// One parse of a whole decimal number, for every place that reads one from text (a port in a
// connect string, a shared count's data, a lease node's weight).
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace zkr::detail {

/// The number the whole of `text` spells, if it fits T; nullopt for empty text, a sign where T
/// has none, trailing characters, or overflow.
template <typename T>
std::optional<T> parse_number(std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace zkr::detail
