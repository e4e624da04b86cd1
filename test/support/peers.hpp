// The peers of the interop tests (test/peers/): where the compiled Curator worker and Curator's
// classes are (CMake compiles CuratorWorker.java when javac and Debian's Curator are there).
#pragma once

#include "build_paths.hpp"

#include <fstream>
#include <map>
#include <string>

namespace zkr::test {

using build_paths::curator_classpath;
using build_paths::curator_discovery_classpath;

/// A Curator worker's view as it writes it (a first line, "initialized", then one line per entry,
/// its key before the first tab): key -> the rest of the line. Empty before the first write.
inline std::map<std::string, std::string> read_curator_view(const std::string& file) {
    std::map<std::string, std::string> out;
    std::ifstream in(file);
    std::string line;
    if (!std::getline(in, line)) return out;
    while (std::getline(in, line)) {
        const auto tab = line.find('\t');
        if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return out;
}

}  // namespace zkr::test
