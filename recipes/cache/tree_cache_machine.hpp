// The decisions of a cache of a ZooKeeper subtree, as a value: events in, actions out, on zk_ops.
// TreeCache's design (the C client has no addWatch): one getData watch and, above the depth
// limit, one getChildren watch per cached node; an exists watch on the root while it is missing.
//
// What it promises, and how:
// - A late reply never puts an older state back: only the newest read of each kind of a node
//   counts, and a node's version never goes back for the same czxid.
// - Events are exact differences: added for a node not shown (a new czxid), updated for a newer
//   version of the node shown, removed for a node shown that is gone; a node deleted and made
//   again is removed, then added. A node's descendants are removed before it.
// - A node is shown only under its parent: a listing that comes before its node's data waits.
// - initialized once per start, when every read asked for since the start has answered.
// - At most `window` reads in flight: a large tree's first read keeps the window full.
// - A reconnection on the same session sends only the reads that failed: ZooKeeper's client
//   re-arms the watches itself, and they fire for what changed meanwhile. A new session (after a
//   loss) reads every cached node again, which removes what went meanwhile.
#pragma once

#include "../core/zk_ops.hpp"

#include <zkr/cache_event.hpp>

#include <climits>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <chrono>
#include <string_view>
#include <variant>
#include <vector>

namespace zkr::detail {

struct tree_cache_config {
    std::string root;
    int max_depth = INT_MAX;  ///< 0: the root only; 1: the root and its children; ...
    bool cache_data = true;   ///< false: nodes keep their stat only
    std::size_t window = 1000;  ///< the most reads in flight at once (at least 1)
    std::vector<std::string> skip_names;  ///< fnmatch patterns: children so named are never read
    std::size_t max_data = 0;  ///< a node whose data is longer keeps its stat only (0: no limit)
    /// A read that fails while connected (the retry policy gave up after the connection came back,
    /// or the server refused it) is sent again after this; one that fails with the connection,
    /// on the reconnection.
    std::chrono::milliseconds retry_delay{1000};
};

namespace tree_in {
/// The cache begins, on this session (0: none yet).
struct start {
    std::int64_t session = 0;
};
}  // namespace tree_in

class tree_cache_machine {
public:
    using input = std::variant<tree_in::start, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, cache_event>;

    explicit tree_cache_machine(tree_cache_config config) : cfg_(std::move(config)) {}

    std::vector<action> resume(const input& e);

    /// Every node shown, by path.
    std::map<std::string, cached_node> view() const;
    bool initialized() const noexcept { return initialized_; }
    /// The nodes it knows of: shown, or listed and not read yet (the root always).
    std::size_t known() const noexcept { return entries_.size(); }

private:
    enum class read_kind { data, children, exists };
    struct entry {
        int depth = 0;
        std::optional<cached_node> node;  // none: not read yet, or (the root) missing
        std::set<std::string> children;   // the names listed (each has an entry)
        zk::ticket data_read = 0;         // the newest getData (or the missing root's exists)
        zk::ticket children_read = 0;     // the newest getChildren
        bool data_failed = false, children_failed = false;  // read again on reconnection
        bool missing = false;  // the root, awaited with an exists watch
        // A listing of a node not shown yet (its data read failed and goes again, or the node
        // was made again and its data is read again): its children are shown only once that
        // node is (by its czxid), never without their parent nor under another node.
        struct listing {
            std::optional<zkr::stat> of;  // the listed node's stat
            std::vector<std::string> names;
        };
        std::optional<listing> held_listing;
        // The pzxid of the parent's listing that named this node last: a node read with a newer
        // czxid was made after that listing, perhaps under a parent made again since. It waits
        // (held_node) until a listing of the parent names it.
        std::int64_t listed_pzxid = 0;
        std::optional<cached_node> held_node;
    };
    struct asked {
        std::string path;
        read_kind kind = read_kind::data;
    };

    void on(const tree_in::start&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due& t);
    void on(const zk::connection_changed& c);

    void refresh(const std::string& path);
    void refresh_all();
    void retry_failed();
    void read_data(const std::string& path, entry& e);
    void read_children(const std::string& path, entry& e);
    void await_root(entry& e);
    zk::ticket ask(const std::string& path, read_kind kind);
    void send(zk::op op);
    void apply_data(const std::string& path, entry& e, const zk::reply& r);
    void apply_children(const std::string& path, entry& e, std::optional<zkr::stat> listed, std::vector<std::string> names);
    void show(const std::string& path, entry& e, cached_node n, bool relist);
    void list_held(const std::string& path, entry& e);
    void gone(const std::string& path);
    void remove_descendants(const std::string& path);
    void emit(cache_event_type type, const std::string& path = {}, std::optional<cached_node> node = std::nullopt);
    void check_initialized();

    tree_cache_config cfg_;
    std::vector<action>* out_ = nullptr;
    zk::ticket last_ticket_ = 0;
    zk::ticket retry_timer_ = 0;            // the failed reads' retry, while one is set
    std::map<std::string, entry> entries_;  // the root's, and every listed descendant's
    std::map<zk::ticket, asked> asked_;     // reads whose reply or watch may still come
    std::set<zk::ticket> loading_;          // reads before initialized whose reply has not come
    std::size_t in_flight_ = 0;             // reads sent whose reply has not come
    std::deque<zk::op> backlog_;            // reads waiting for room in the window
    bool started_ = false, initialized_ = false, interrupted_ = false;
    std::int64_t session_ = 0;
};

}  // namespace zkr::detail
