#include "log_throttle.hpp"

#include <cctype>

namespace zkr::detail {

std::string log_throttle::shape(std::string_view line) {
    // From the level marker on: before it, the C client puts a timestamp and a thread id.
    if (const auto at = line.find("ZOO_"); at != std::string_view::npos) line.remove_prefix(at);
    std::string out;
    out.reserve(line.size());
    for (const char ch : line)
        if (!std::isdigit(static_cast<unsigned char>(ch))) out += ch;
    return out;
}

log_throttle::verdict log_throttle::offer(std::string_view line, std::chrono::steady_clock::time_point now) {
    verdict v;
    auto s = shape(line);
    if (auto it = shapes_.find(s); it != shapes_.end()) {
        const bool in_series = now - it->second.last < series_;
        it->second.last = now;
        if (in_series && now - it->second.logged < window_) {
            ++it->second.held_back;
            v.log = false;
            return v;
        }
        if (const int n = it->second.held_back; n > 0) {
            const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - it->second.logged).count();
            v.summary = std::to_string(n) + " similar line" + (n == 1 ? "" : "s") + " held back in the last " + std::to_string(secs) + " s";
        }
        it->second = {now, now, 0};
        return v;
    }
    // A long-running client meets many shapes: forget those of long ago.
    if (shapes_.size() >= 64) std::erase_if(shapes_, [&](const auto& kv) { return now - kv.second.logged >= window_; });
    shapes_.emplace(std::move(s), seen{now, now, 0});
    return v;
}

}  // namespace zkr::detail
