// znode path validation and helpers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zkr {

/// Why a znode path is invalid, or nullopt when it is valid. A valid path starts with '/',
/// has no trailing '/' (except "/" itself), no empty, "." or ".." segments, and no NUL or
/// control characters (U+0000-U+001F, U+007F-U+009F).
std::optional<std::string> path_error(std::string_view path);

/// Why `name` cannot be one node's name under a parent (empty, a '/', "." or "..", or a character
/// a path refuses), or nullopt when it can.
std::optional<std::string> node_name_error(std::string_view name);

/// parent + "/" + child, handling the root.
std::string join_path(std::string_view parent, std::string_view child);

/// The parent of a valid path ("/" for a top-level node).
std::string_view parent_path(std::string_view path);

/// The last segment of a valid path.
std::string_view node_name(std::string_view path);

/// The path as it can be shown in a message: bytes below 0x20 and 0x7f are written as \xNN (a
/// NUL would cut an exception's what() short).
std::string printable_path(std::string_view path);

}  // namespace zkr
