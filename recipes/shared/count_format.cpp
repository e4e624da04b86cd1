// A count's node data, in each format (zkr's decimal text; Curator's SharedCount bytes).
#include <zkr/shared_count.hpp>

#include "../core/big_endian.hpp"
#include "../../src/parse_number.hpp"  // the client layer's one parse

namespace zkr {

std::string count_to_data(std::int32_t value, count_format format) {
    if (format == count_format::decimal_text) return std::to_string(value);
    return detail::big_endian_bytes(value);
}

std::optional<std::int32_t> count_from_data(std::string_view data, count_format format) {
    if (format == count_format::decimal_text) return detail::parse_number<std::int32_t>(data);
    return detail::from_big_endian_bytes<std::int32_t>(data);
}

}  // namespace zkr
