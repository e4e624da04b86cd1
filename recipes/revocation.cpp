// Revocation: the revoker writes Curator's signal to the holders' nodes (revoke), a revocable hold
// reads it with a data watch on its own node (watch_revocation).
#include "revocation.hpp"

#include "lock_driver.hpp"
#include "queue_kinds.hpp"

#include <zkr/client.hpp>
#include <zkr/path.hpp>
#include <zkr/revocation.hpp>

#include "../src/observe.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

namespace zkr {

using boost::system::error_code;

namespace detail {
namespace {

struct revocation_watch : std::enable_shared_from_this<revocation_watch> {
    revocation_watch(zkr::client& c, std::weak_ptr<hold> h, std::string node_path, std::function<void()> fn, std::string data,
                     std::string_view kind)
        : client(c), hold_(std::move(h)), node(std::move(node_path)), on_revoke(std::move(fn)), own_data(std::move(data)), recipe(kind) {}

    zkr::client& client;
    std::weak_ptr<hold> hold_;
    const std::string node;
    const std::function<void()> on_revoke;
    const std::string own_data;  // what the request overwrote
    const std::string_view recipe;  // the rule's kind (a literal)
    std::atomic<bool> told{false};

    // The hold still counts: there is someone to tell.
    std::shared_ptr<hold> live_hold() const {
        auto h = hold_.lock();
        if (!h) return nullptr;
        const auto s = h->state();
        return s == hold_state::held || s == hold_state::doubtful ? h : nullptr;
    }

    // Reads the node's data and sets the watch; both answers come on the callback thread.
    void arm() {
        if (told || !live_hold()) return;
        client.async_get_data(
            node,
            [self = shared_from_this()](const watch_event& e) {
                if (e.type == watch_event_type::node_data_changed) self->arm();  // (deleted, or the session went: the hold ended)
            },
            [self = shared_from_this()](const error_code& ec, data_result d) {
                if (ec || d.data != revocation_signal) return;
                self->tell();
                self->restore(d.stat.version);
            });
    }

    // Writes our data back over the request (at the version read: a later write stays), so that
    // the node names its holder again (`zkr status`). Best effort: the hold may end meanwhile.
    void restore(std::int32_t version) {
        if (!live_hold()) return;
        client.async_set_data(node, own_data, version, [self = shared_from_this()](const error_code& ec, const zkr::stat&) {
            if (ec && ec != errc::no_node && ec != errc::bad_version)
                self->client.logger()->debug("hold on {}: writing its data back after the revocation request: {}", self->node, ec.message());
        });
    }

    void tell() {
        auto h = live_hold();
        if (!h || told.exchange(true)) return;
        client.logger()->info("hold on {} (token {}): asked to let go (revocation)", node, h->fencing_token());
        if (const auto& o = client.options(); o.observer) {
            hold_event e;
            e.kind = hold_event_kind::revocation_requested;
            e.lock_path = std::string(parent_path(node));
            e.node_path = node;
            e.fencing_token = h->fencing_token();
            e.recipe = recipe;
            post_to_observer(o, callback_executor(connection_of(client)), std::move(e));
        }
        h->ask_to_let_go();
        try {
            on_revoke();
        } catch (const std::exception& e) {
            client.logger()->error("hold on {}: the revocation listener threw: {}", node, e.what());
        }
    }
};

}  // namespace

void watch_revocation(const std::shared_ptr<hold>& h, std::function<void()> on_revoke, std::string node_data, std::string_view recipe) {
    auto w = std::make_shared<revocation_watch>(h->get_client(), h, h->node_path(), std::move(on_revoke), std::move(node_data), recipe);
    w->arm();
}

}  // namespace detail

namespace {

[[noreturn]] void refuse(errc code, const std::string& path, const std::string& what) {
    throw zkr::error(make_error_code(code), path, "revoke " + printable_path(path) + ": " + what);
}

// Writes the signal; false when the node is gone (its holder left meanwhile).
bool ask(client& c, const std::string& node) {
    error_code ec;
    c.set_data(node, revocation_signal, -1, ec);
    if (ec == errc::no_node) return false;
    detail::throw_if(ec, node, "writing the revocation signal to " + printable_path(node));
    return true;
}

}  // namespace

std::vector<std::string> revoke(client& c, const std::string& lock_path) {
    detail::check_lock_path(lock_path, c.options().name_space);
    error_code ec;
    const auto children = c.get_children(lock_path, ec).children;
    if (ec == errc::no_node) refuse(errc::lock_not_held, lock_path, "nothing holds it (no such node)");
    detail::throw_if(ec, lock_path, "listing the lock " + printable_path(lock_path));
    // The holders of the first revocable kind found, counted by the kind's own rule.
    std::vector<std::string> holders;
    for (const auto& kind : queue_kinds()) {
        if (!kind.revocable) continue;
        const auto queue = queue_of_kind(kind, children);
        if (queue.empty()) continue;
        const auto n = kind.observer(queue)->holders(queue);
        holders.assign(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
        break;
    }
    if (holders.empty()) {
        for (const auto& child : children)
            if (const auto* kind = kind_of_node(child); kind && !kind->revocable)
                refuse(errc::invalid_argument, lock_path, "it is a " + std::string(kind->name) + ": only mutexes and read-write locks are revocable");
        refuse(errc::lock_not_held, lock_path, "nothing holds it");
    }
    std::vector<std::string> asked;
    for (const auto& name : holders)
        if (auto node = join_path(lock_path, name); ask(c, node)) asked.push_back(std::move(node));
    if (asked.empty()) refuse(errc::lock_not_held, lock_path, "its holder left before the request reached it");
    return asked;
}

void revoke(client& c, const std::string& lock_path, const std::string& node) {
    detail::check_lock_path(lock_path, c.options().name_space);
    const auto full = node.empty() || node.front() != '/' ? join_path(lock_path, node) : node;
    if (parent_path(full) != lock_path) refuse(errc::invalid_argument, lock_path, "the node " + node + " is not one of its nodes");
    if (!ask(c, full)) refuse(errc::lock_not_held, lock_path, "the node " + printable_path(full) + " is gone");
}

}  // namespace zkr
