// Carries out one zk::op on the real connection (recipes/core/zk_ops.hpp): what every zk_engine uses.
#pragma once

#include "zk_ops.hpp"

#include <zkr/client.hpp>

#include <functional>

namespace zkr::detail {

/// Sends op on c's connection. Its reply and its watch's event come to `feed` on the network
/// thread (never inside this call). A timer is not an op the connection knows: the engine runs it.
/// A read of a node that has gone is an answer a machine expects (no_node, not a failure to the observer).
void send_op(zkr::client& c, const zk::op& op, std::function<void(zk::event)> feed);

}  // namespace zkr::detail
