// The client's namespace (chroot): user paths to full paths on the way out, back on the way in.
#include "connection_internal.hpp"

namespace zkr::detail {

std::string connection::full_path(std::string_view user) const {
    if (ns_.empty()) return std::string(user);
    if (user == "/") return ns_;
    return ns_ + std::string(user);
}

// In place: a reply's path without a namespace (most clients) is kept as it came, not copied.
void connection::to_user_path(std::string& full) const {
    if (ns_.empty()) return;
    if (full == ns_) full = "/";
    else if (full.size() > ns_.size() && full.compare(0, ns_.size(), ns_) == 0 && full[ns_.size()] == '/') full.erase(0, ns_.size());
}

}  // namespace zkr::detail
