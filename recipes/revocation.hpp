// A revocable hold's side of revocation: it watches its own node's data for the revocation signal.
#pragma once

#include "hold.hpp"

#include <functional>
#include <memory>

namespace zkr::detail {

/// Watches h's node for revocation_signal (include/zkr/revocation.hpp) until the hold ends: the
/// first time it is read there (also when it was written before the watch was set), h's stop is
/// requested and on_revoke runs, both on the client's callback thread. One extra read per hold;
/// the watch keeps nothing of the hold alive. The node's own data (`node_data`, host:pid by
/// default), which the request overwrote, is then written back (if nobody wrote the node since),
/// so that `zkr status` names the holder again; no waiter takes that write for anything.
/// recipe: the rule's kind, for the observer's revocation_requested event.
void watch_revocation(const std::shared_ptr<hold>& h, std::function<void()> on_revoke, std::string node_data, std::string_view recipe);

}  // namespace zkr::detail
