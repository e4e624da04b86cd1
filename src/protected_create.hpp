// A protected create's decisions (Curator's protection mode): a create whose reply is lost may
// still have made its node. Each node is named with a prefix of its own ("_c_<uuid>-"), so the
// next try first looks for it by listing the parent, adopts a node with the prefix when this
// session owns it, and creates only when none is found; a create that gives up while its node may
// exist leaves the prefix to the clean-up queue, which looks for the node and deletes it.
// On session expiry the next try draws a new prefix: the old session's ephemeral node goes with it,
// and a later lookup on this session must not find it and take it for ours. A persistent node an
// earlier try made would outlive both sessions: its prefix goes to the clean-up queue.
// A value in each protected create's operation; the connection carries out what it says
// (connection_protected.cpp). Unit-tested without a server (protected_create_test.cpp).
#pragma once

#include "protect_prefix.hpp"

#include <zkr/error.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace zkr::detail {

class protected_create {
public:
    /// The create is first sent: its first prefix.
    void start() {
        prefix_ = protect_prefix::make();
        looks_up_ = false;
    }
    std::string_view prefix() const noexcept { return prefix_.view(); }
    /// The next try looks for the node of an earlier one before it creates.
    bool looks_up_first() const noexcept { return looks_up_; }
    /// Some try may have made a node nobody has adopted: a create that ends now without success
    /// leaves its prefix to the clean-up queue.
    bool may_have_left_node() const noexcept { return looks_up_; }

    /// A try failed with ec, and the create may be tried again. Returns the prefix of a node that
    /// earlier tries may have left for good (a persistent one, on a session that expired), for the
    /// clean-up queue.
    std::optional<protect_prefix> failed(const boost::system::error_code& ec, bool ephemeral) {
        if (ec != errc::session_expired) {
            looks_up_ = true;  // the create may have been applied though its reply was lost
            return std::nullopt;
        }
        std::optional<protect_prefix> left;
        if (!ephemeral) left = prefix_;
        start();
        return left;
    }

    /// The lookup's listing: whether a child is one of ours (to check its owner).
    bool is_ours(std::string_view child) const noexcept { return child.starts_with(prefix_.view()); }
    /// The lookup found none of ours (none listed, or the one listed went before its check):
    /// create it. A read-only server may lack our node (made on the quorum after it was cut off),
    /// so there the lookup stays pending: if the create then ends (refused as read-only), its
    /// prefix goes to the clean-up queue, which looks on a read-write connection.
    void found_none(bool on_read_only_server) {
        if (!on_read_only_server) looks_up_ = false;
    }
    /// The check of a child of ours that exists: true to adopt it (this session owns it, or it is
    /// persistent). Otherwise it is a node of an old session: the create draws a new prefix and
    /// creates.
    bool adopts(std::int64_t owner, std::int64_t session, bool ephemeral) {
        if (!ephemeral || owner == session) return true;
        start();
        return false;
    }

private:
    protect_prefix prefix_;
    bool looks_up_ = false;
};

}  // namespace zkr::detail
