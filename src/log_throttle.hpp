// Keeps a repeating log line from flooding: the C client logs an error and a warning on every
// reconnect attempt (every ~66 ms through an outage, 31 lines a second).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace zkr::detail {

/// Decides, line by line, what to log. A line whose shape (its text from the level marker on,
/// digits left out: ports, errnos and line numbers vary) repeats within `series` of the last one
/// (a reconnect loop's) is held back and counted, except once per `window`; a line that comes after
/// a pause (each of a few connection drops, say) is logged, with a summary of what was held back.
/// Shapes are tracked apart, as the C client alternates two lines. No clock of its own: the caller
/// gives `now`.
class log_throttle {
public:
    explicit log_throttle(std::chrono::milliseconds window = std::chrono::seconds(30),
                          std::chrono::milliseconds series = std::chrono::seconds(1))
        : window_(window), series_(series) {}

    struct verdict {
        bool log = true;
        /// Set when lines were held back since the last one logged: "N similar lines in T s".
        std::optional<std::string> summary;
    };
    verdict offer(std::string_view line, std::chrono::steady_clock::time_point now);

    /// The part of a line that decides whether it repeats another.
    static std::string shape(std::string_view line);

private:
    struct seen {
        std::chrono::steady_clock::time_point logged, last;
        int held_back = 0;
    };
    std::chrono::milliseconds window_, series_;
    std::map<std::string, seen> shapes_;
};

}  // namespace zkr::detail
