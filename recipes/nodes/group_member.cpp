// zkr::group_member: a persistent_node for this member and a children_cache of the group; this file
// holds only the checks and the merge of the two.
#include <zkr/group_member.hpp>

#include <zkr/error.hpp>
#include <zkr/path.hpp>

namespace zkr {

namespace {

// The member node's path, or zkr::error saying why the id cannot be one node name.
std::string member_path(const std::string& group_path, const std::string& id) {
    if (auto e = path_error(group_path))
        throw zkr::error(make_error_code(errc::invalid_path), group_path, "invalid group path \"" + group_path + "\": " + *e);
    if (auto e = node_name_error(id))
        throw zkr::error(make_error_code(errc::invalid_argument), group_path, "invalid member id \"" + printable_path(id) + "\": " + *e);
    return join_path(group_path, id);
}

}  // namespace

group_member::group_member(client& c, std::string group_path, std::string id, std::string data)
    : id_(std::move(id)),
      node_(c, member_path(group_path, id_), create_mode::ephemeral, std::move(data)),
      members_(c, std::move(group_path), true) {}

group_member::~group_member() {
    try {
        close();
    } catch (...) {  // (close does not throw; a lock's system_error is the only conceivable one)
    }
}

void group_member::start() {
    node_.start();
    members_.start();
}

bool group_member::close(std::chrono::milliseconds timeout) {
    const bool gone = node_.close(timeout);
    members_.close();
    return gone;
}

void group_member::set_data(std::string data) { node_.set_data(std::move(data)); }

bool group_member::wait_joined(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    if (!node_.wait_for_initial_create(timeout)) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    return members_.wait_initialized(std::max(left, std::chrono::milliseconds(0)));
}

std::map<std::string, std::string> group_member::current_members() const {
    std::map<std::string, std::string> out;
    for (const auto& name : members_.children())
        if (auto n = members_.get(name)) out.emplace(name, std::move(n->data));
    out[id_] = node_.data();
    return out;
}

}  // namespace zkr
