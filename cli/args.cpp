#include "args.hpp"

#include <cmath>
#include <cstdlib>

namespace zkr::cli {

args::args(const std::vector<std::string>& argv, const std::vector<flag>& known) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a == "--") {
            rest_.assign(argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
            return;
        }
        if (a.size() < 2 || a[0] != '-') {
            positionals_.push_back(a);
            continue;
        }
        std::string name = a, inline_value;
        bool has_inline = false;
        if (a.rfind("--", 0) == 0) {
            if (const auto eq = a.find('='); eq != std::string::npos) {
                name = a.substr(0, eq);
                inline_value = a.substr(eq + 1);
                has_inline = true;
            }
        }
        const flag* f = nullptr;
        for (const auto& k : known)
            if (name == k.long_name || (!k.short_name.empty() && name == k.short_name)) f = &k;
        if (!f) throw usage_error("unknown option " + name);
        if (!f->takes_value) {
            if (has_inline) throw usage_error(f->long_name + " takes no value");
            values_[f->long_name] = "";
            continue;
        }
        if (has_inline) {
            values_[f->long_name] = inline_value;
        } else if (i + 1 < argv.size()) {
            values_[f->long_name] = argv[++i];
        } else {
            throw usage_error(name + " needs a value");
        }
    }
}

std::optional<std::string> args::value(const std::string& long_name) const {
    const auto it = values_.find(long_name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::optional<double> args::number(const std::string& long_name, double min, double max) const {
    const auto v = value(long_name);
    if (!v) return std::nullopt;
    char* end = nullptr;
    const double d = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(d) || d < min || d > max) {
        auto fmt = [](double x) {
            std::string s = std::to_string(x);
            s.erase(s.find_last_not_of('0') + 1);
            if (!s.empty() && s.back() == '.') s.pop_back();
            return s;
        };
        throw usage_error(long_name + " must be a number from " + fmt(min) + " to " + fmt(max) + ", got \"" + *v + "\"");
    }
    return d;
}

}  // namespace zkr::cli
