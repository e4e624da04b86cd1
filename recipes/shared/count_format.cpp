// A count's node data, in each format (zkr's decimal text; Curator's SharedCount bytes).
#include <zkr/shared_count.hpp>

#include "../../src/parse_number.hpp"  // the client layer's one parse

namespace zkr {

std::string count_to_data(std::int32_t value, count_format format) {
    if (format == count_format::decimal_text) return std::to_string(value);
    const auto bits = static_cast<std::uint32_t>(value);  // two's complement, as Java's int
    return {static_cast<char>(bits >> 24), static_cast<char>(bits >> 16), static_cast<char>(bits >> 8), static_cast<char>(bits)};
}

std::optional<std::int32_t> count_from_data(std::string_view data, count_format format) {
    if (format == count_format::decimal_text) return detail::parse_number<std::int32_t>(data);
    if (data.size() != 4) return std::nullopt;
    std::uint32_t bits = 0;
    for (const char c : data) bits = (bits << 8) | static_cast<unsigned char>(c);
    return static_cast<std::int32_t>(bits);
}

}  // namespace zkr
