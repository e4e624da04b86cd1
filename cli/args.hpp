// The command line's small argument reader: flags with values ("-w 3", "--wait 3", "--wait=3"),
// switches, positionals, and everything after "--".
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace zkr::cli {

/// A bad command line: the message says what was wrong; exit code 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct flag {
    std::string short_name;  ///< "-w", or empty
    std::string long_name;   ///< "--wait"
    bool takes_value = false;
};

class args {
public:
    /// Reads argv (after the command name). Throws usage_error for an unknown flag or a missing value.
    args(const std::vector<std::string>& argv, const std::vector<flag>& known);

    bool has(const std::string& long_name) const { return values_.count(long_name) > 0; }
    std::optional<std::string> value(const std::string& long_name) const;
    /// A number flag; throws usage_error naming the flag when it is not a number in [min, max].
    std::optional<double> number(const std::string& long_name, double min, double max) const;
    const std::vector<std::string>& positionals() const noexcept { return positionals_; }
    /// What followed "--".
    const std::vector<std::string>& rest() const noexcept { return rest_; }

private:
    std::map<std::string, std::string> values_;
    std::vector<std::string> positionals_;
    std::vector<std::string> rest_;
};

}  // namespace zkr::cli
