// Results of the ZooKeeper operations.
#pragma once

#include <zkr/stat.hpp>

#include <string>
#include <vector>

namespace zkr {

/// What a create gives.
struct create_result {
    std::string path;  ///< The created node's path (with sequence suffix), without namespace.
    zkr::stat stat;    ///< stat.czxid is the fencing token of a lock node.
};

/// What a read of a node's data gives.
struct data_result {
    std::string data;  ///< The node's data, as bytes.
    zkr::stat stat;    ///< The node's stat.
};

/// What a listing of a node's children gives.
struct children_result {
    std::vector<std::string> children;  ///< Child names, unsorted, as the server sends them.
    zkr::stat stat;                     ///< The parent's stat.
};

}  // namespace zkr
