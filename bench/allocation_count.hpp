// The benchmark's count of heap allocations (issue 48): operator new and delete, replaced in
// allocation_count.cpp for the whole benchmark process. The ZooKeeper C client's own mallocs
// are not counted: only what zkr's C++ code (and the libraries it calls) allocates.
#pragma once

#include <cstdint>

namespace zkr::bench {

/// Allocations (every operator new) since the process started, on every thread.
std::uint64_t allocations();
/// Frees (every operator delete of a pointer other than null) since the process started.
std::uint64_t frees();

}  // namespace zkr::bench
