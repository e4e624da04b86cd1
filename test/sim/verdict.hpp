// What one simulated run found, shared by every family's world: the first promise broken (later
// ones are its consequences) and, when traced, the last steps before it, to replay a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zkr::sim {

struct verdict {
    bool ok = true;
    std::string violation;           ///< what the checker found first
    std::vector<std::string> trace;  ///< the last steps (only when traced)
    long steps = 0;

    /// A broken promise; only the first is kept (and traced).
    void violate(std::string what) {
        if (!ok) return;
        ok = false;
        violation = std::move(what);
        note("VIOLATION: " + violation);
    }

    /// A step for the trace, stamped with the step count (and the simulated time, when the world
    /// has a clock). Nothing when not traced.
    void note(const std::string& line, std::optional<std::int64_t> now_ms = std::nullopt) {
        if (!traced) return;
        std::string stamp = "[" + std::to_string(steps);
        if (now_ms) stamp += " t=" + std::to_string(*now_ms) + "ms";
        trace.push_back(stamp + "] " + line);
        if (trace.size() > kept_steps) trace.erase(trace.begin());
    }

    bool traced = false;             ///< set by the world before the run
    std::size_t kept_steps = 200;
};

/// Runs a world: step() until it returns false (the world is quiet) or a promise breaks. A world
/// still busy after max_steps breaks the promise that it gets quiet.
template <typename Step>
void run_until_quiet(verdict& v, long max_steps, Step step) {
    while (v.ok) {
        if (++v.steps > max_steps) return v.violate("no quiescence after " + std::to_string(max_steps) + " steps");
        if (!step()) return;
    }
}

}  // namespace zkr::sim
