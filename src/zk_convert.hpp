// Conversions between zkr's types and the ZooKeeper C client's.
#pragma once

#include <zkr/acl.hpp>
#include <zkr/create_options.hpp>
#include <zkr/error.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/stat.hpp>

#include <zookeeper/zookeeper.h>

#include <memory>
#include <string>
#include <vector>

namespace zkr::detail {

inline boost::system::error_code to_error_code(int rc) {
    if (rc == ZOK) return {};
    if (rc == ZCLOSING) return make_error_code(errc::closed);
    return make_error_code(static_cast<errc>(rc));
}

inline zkr::stat from_zk(const struct Stat& s) {
    return {s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion,
            s.ephemeralOwner, s.dataLength, s.numChildren, s.pzxid};
}

int to_zk_mode(create_mode m);

/// An ACL_vector whose strings live as long as this object (the C struct wants char*).
class acl_storage {
public:
    void assign(const acl_list& acl);
    struct ACL_vector* get() { return &vector_; }

private:
    std::vector<std::string> strings_;
    std::vector<struct ACL> entries_;
    struct ACL_vector vector_ {};
};

/// The zoo_op_t array of a multi, the buffers it points into, and its results.
struct multi_storage {
    std::vector<multi_op> source;
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::unique_ptr<acl_storage>> acls;
    std::vector<std::vector<char>> path_buffers;
    std::vector<struct Stat> stats;

    void build(std::vector<multi_op> ops_in, const acl_list& default_acl);
    std::vector<multi_result> collect(int rc) const;
};

}  // namespace zkr::detail
