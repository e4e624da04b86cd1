// How many TCP segments this process has sent to a port: for tests of what goes on the wire.
#pragma once

#include <cstdint>

namespace zkr::test {

/// The segments sent so far on every socket of this process whose peer is 127.0.0.1:`port` (or
/// any address at that port), each socket counted once however many descriptors it has (zkr
/// watches a dup of the C client's).
std::uint64_t tcp_segments_sent_to(int port);

}  // namespace zkr::test
