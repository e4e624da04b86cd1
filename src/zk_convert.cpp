#include "zk_convert.hpp"

namespace zkr::detail {

int to_zk_mode(create_mode m) {
    switch (m) {
        case create_mode::persistent: return ZOO_PERSISTENT;
        case create_mode::ephemeral: return ZOO_EPHEMERAL;
        case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
        case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
        case create_mode::container: return ZOO_CONTAINER;
        case create_mode::persistent_with_ttl: return ZOO_PERSISTENT_WITH_TTL;
        case create_mode::persistent_sequential_with_ttl: return ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL;
    }
    return ZOO_PERSISTENT;
}

void acl_storage::assign(const acl_list& acl) {
    strings_.clear();
    strings_.reserve(acl.size() * 2);
    for (const auto& a : acl) {
        strings_.push_back(a.scheme);
        strings_.push_back(a.id);
    }
    entries_.resize(acl.size());
    for (std::size_t i = 0; i < acl.size(); ++i) {
        entries_[i].perms = acl[i].permissions;
        entries_[i].id.scheme = strings_[2 * i].data();
        entries_[i].id.id = strings_[2 * i + 1].data();
    }
    vector_.count = static_cast<int32_t>(entries_.size());
    vector_.data = entries_.data();
}

void multi_storage::build(std::vector<multi_op> ops_in, const acl_list& default_acl) {
    source = std::move(ops_in);
    const std::size_t n = source.size();
    ops.assign(n, zoo_op_t{});
    results.assign(n, zoo_op_result_t{});
    stats.assign(n, {});
    path_buffers.assign(n, {});
    acls.clear();
    for (std::size_t i = 0; i < n; ++i) {
        const auto& o = source[i];
        switch (o.type) {
            case multi_op::kind::create: {
                auto acl = std::make_unique<acl_storage>();
                acl->assign(o.acl && !o.acl->empty() ? *o.acl : default_acl);
                path_buffers[i].assign(o.path.size() + 64, '\0');
                zoo_create_op_init(&ops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), acl->get(),
                                   to_zk_mode(o.mode), path_buffers[i].data(), static_cast<int>(path_buffers[i].size()));
                acls.push_back(std::move(acl));
                break;
            }
            case multi_op::kind::remove: zoo_delete_op_init(&ops[i], o.path.c_str(), o.version); break;
            case multi_op::kind::set_data:
                zoo_set_op_init(&ops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), o.version,
                                &stats[i]);
                break;
            case multi_op::kind::check: zoo_check_op_init(&ops[i], o.path.c_str(), o.version); break;
        }
    }
}

std::vector<multi_result> multi_storage::collect(int rc) const {
    std::vector<multi_result> out(source.size());
    for (std::size_t i = 0; i < source.size(); ++i) {
        // A multi that failed as a whole before the server answered (connection loss) has no
        // per-operation results: report the common error everywhere.
        const int err = (rc != ZOK && rc != ZNONODE && rc != ZNODEEXISTS && rc != ZBADVERSION && rc != ZNOTEMPTY &&
                         rc != ZNOAUTH && rc != ZNOCHILDRENFOREPHEMERALS && rc != ZINVALIDACL && rc != ZBADARGUMENTS)
                            ? rc
                            : results[i].err;
        out[i].error = to_error_code(err);
        if (err == ZOK) {
            if (source[i].type == multi_op::kind::create) out[i].path = path_buffers[i].data();
            if (source[i].type == multi_op::kind::set_data) out[i].stat = from_zk(stats[i]);
        }
    }
    return out;
}

}  // namespace zkr::detail
