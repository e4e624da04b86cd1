// Operations of an atomic multi (transaction).
#pragma once

#include <zkr/create_options.hpp>
#include <zkr/stat.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>

namespace zkr {

/// One operation of a multi. Build them with the factory functions below.
struct multi_op {
    /// What the operation does.
    enum class kind { create, remove, set_data, check };
    kind type = kind::check;                     ///< What it does.
    std::string path;                            ///< The node it concerns.
    std::string data;                            ///< create, set_data: the data.
    std::int32_t version = -1;                   ///< remove, set_data, check: the expected version (-1: any).
    create_mode mode = create_mode::persistent;  ///< create: the mode.
    std::optional<acl_list> acl;                 ///< create: the ACL (the client's default when empty).

    /// Creates the node (its parent must exist).
    static multi_op create(std::string path, std::string data = {},
                           create_mode mode = create_mode::persistent) {
        return {kind::create, std::move(path), std::move(data), -1, mode, std::nullopt};
    }
    /// Deletes the node, if it has this version (unless -1).
    static multi_op remove(std::string path, std::int32_t version = -1) {
        return {kind::remove, std::move(path), {}, version, create_mode::persistent, std::nullopt};
    }
    /// Sets the node's data, if it has this version (unless -1).
    static multi_op set_data(std::string path, std::string data, std::int32_t version = -1) {
        return {kind::set_data, std::move(path), std::move(data), version, create_mode::persistent,
                std::nullopt};
    }
    /// Succeeds only if the node exists (and has this version, unless -1).
    static multi_op check(std::string path, std::int32_t version = -1) {
        return {kind::check, std::move(path), {}, version, create_mode::persistent, std::nullopt};
    }
};

/// The result of one operation of a multi. When the multi fails, every result carries an error:
/// the failing operation its own, the others runtime_inconsistency (rolled back).
struct multi_result {
    boost::system::error_code error;  ///< Empty when the whole multi succeeded.
    std::string path;  ///< For create: the created path (without namespace).
    zkr::stat stat;    ///< For set_data: the new stat.
};

}  // namespace zkr
