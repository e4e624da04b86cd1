// The client's namespace (chroot): user paths to full paths on the way out, back on the way in.
#include "connection_internal.hpp"

namespace zkr::detail {

std::string connection::full_path(std::string_view user) const {
    if (ns_.empty()) return std::string(user);
    if (user == "/") return ns_;
    return ns_ + std::string(user);
}

std::string connection::user_path(std::string_view full) const {
    if (ns_.empty()) return std::string(full);
    if (full == ns_) return "/";
    if (full.size() > ns_.size() && full.compare(0, ns_.size(), ns_) == 0 && full[ns_.size()] == '/')
        return std::string(full.substr(ns_.size()));
    return std::string(full);
}

}  // namespace zkr::detail
