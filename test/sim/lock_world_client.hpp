// The lock world's simulated client, as records: each request as the client library sends (and
// resends) it, what comes back for a machine, the watches, each client's connection and workers,
// the world's timers, and each acquisition the world runs. Included by lock_sim.cpp alone.
#pragma once

#include "lock_sim.hpp"
#include "../../recipes/queue/lock_rule.hpp"
#include "sim_zookeeper.hpp"
#include "zk_client_sim.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zkr::sim::lock_world {

using namespace zkr::detail;

constexpr const char* lock_path = "/locks/x";
// A multi-lock's member paths (the other recipes use the first alone).
const std::vector<std::string> multi_lock_paths = {"/locks/x", "/locks/y", "/locks/z"};

// One request as the client library sends (and resends) it.
struct request {
    enum kind { create, list, get_data, exists, set_data, remove, release, remove_protected } what = create;
    std::uint64_t machine = 0;  // 0: fire and forget (touch, guaranteed remove)
    lock_ticket ticket = 0;
    std::string path;  // create: the parent
    std::string name;  // create: the name after the protect prefix
    std::string prefix;
    // A protected create's recovery, as the connection runs it: separate requests that interleave
    // with everything else. `lookup` lists the parent for a node with our prefix (its first try
    // may have been applied), `check` reads the owner of the one found, `fresh` creates.
    enum step_kind { fresh, lookup, check } step = fresh;
    std::string found;              // check: the node the lookup found
    std::optional<node> found_node;  // check's reply: that node, if it is still there
    bool plain = false;    // create: a plain ephemeral node (a downgrade's read node), not sequential
    bool with_data = false;  // exists: getData instead (a revocable hold's own-node read)
    bool cache = false;  // list: the lock cache's, with a children watch, sent once (fail-fast)
    std::int32_t version = -1;  // set_data: the version it must find (-1: any)
    std::string data;  // set_data: what it writes
};

// Something for a machine, in the order the client sees it.
struct delivery {
    std::uint64_t machine = 0;
    zk_lock_input event;
    bool own = false;  // a watch event of the machine's own node
    bool cache = false;  // for the client's lock cache: its listing's reply, or its children watch
};

struct inbound {
    std::optional<request> answers;  // a reply (to this request) or, if empty, a watch event
    delivery what;
};

struct watch_target {
    int client = 0;
    std::int64_t session = 0;
    std::uint64_t machine = 0;
    lock_ticket ticket = 0;
    bool own = false;
    std::string path;  // the watched node
    bool cache = false;  // the lock cache's children watch on the folder
};

struct client {
    int id = 0;
    std::int64_t session = 0;
    bool connected = true;
    bool closed = false;
    bool opening = false;  // its session is lost; a new one connects later
    bool read_only = false;  // connected to a server cut off from the quorum: reads only
    std::int64_t dropped_at_zxid = 0;  // the last write applied when its connection last dropped
    std::int64_t read_only_seen_zxid = 0;  // the last write its read-only server has
    bool odd = false;      // its semaphore disagrees on the maximum
    std::deque<request> outbound;   // sent, not yet applied by the server
    std::deque<inbound> replies;    // applied; the reply or event is on its way
    std::deque<delivery> local;     // from the client library itself (connection changes, fail-fast)
    std::deque<request> resend;     // to send once connected
    std::deque<inbound> stashed;    // watch events of this session to deliver on reconnection
    // The workers: acquire, hold a while, release, `attempts` times in all. Some clients run two at
    // once on their one session (two lock objects, or two threads, on one client).
    int parallel = 1;
    std::map<std::uint64_t, bool> running;  // the attempts in progress: machine -> holding
    int attempts_started = 0;
    int attempts_done = 0;
    int protect_counter = 0;
    std::int64_t rate_ms = -1;  // the simulated millisecond of the requests counted in rate_count
    int rate_count = 0;
    // cached_mutex: the client's lock cache (null: it does not cache), the machine it keeps or
    // lent (0: none), and its listing in flight (the ticket its answer must carry).
    std::unique_ptr<cache_decisions> cache;
    std::uint64_t kept = 0;
    bool lent = false;
    lock_ticket cache_listing = 0;
};

struct timer {
    enum kind { engine, hold_end, next_attempt, expire_session, cancel, open_session, revoke, let_go } what;
    int client = 0;
    std::uint64_t machine = 0;
    lock_ticket ticket = 0;
    std::int64_t session = 0;
    std::function<void()> on_due;  // engine: a machine's timer (its deadline, its own-node watch's delay)
};

class world_engine;

struct live_machine {
    int client = 0;
    std::unique_ptr<machine> m;
    std::string node_name;  // what its create asks for (the odd client's differs)
    const lock_rule* rule = nullptr;
    int weight = 1;  // leases its node asks for (acquire_many)
    std::uint64_t downgrade_of = 0;  // a read-write lock's downgrade: the writer machine it follows
    std::string writer_node;         // and that writer's node name
    std::string path = lock_path;    // its lock's path
    std::uint64_t group = 0;         // a multi-lock member: the multi-acquire it is part of
    // What the engine registers for the client's other acquires (client_nodes), until the machine
    // finishes: the nodes its creates made, and whether a create is in flight (its node may be any
    // new child of the lock's path).
    std::set<std::string> nodes;
    int creates_in_flight = 0;
    // revocable_mutex: a revocable acquire, whose hold lasts until a revocation request reaches it.
    bool revocable = false;
    // Its engine, and what the engine waits for from the client: each request's reply and each
    // watch's event (by ticket), and connection news while it observes, with the session of the
    // news last told.
    std::shared_ptr<world_engine> engine;
    std::multimap<lock_ticket, std::function<void(zk::reply&&)>> replies;
    std::multimap<lock_ticket, std::function<void(zk::watch_fired&&)>> watches;
    std::map<std::uint64_t, std::function<void(connection_state)>> observers;
    std::uint64_t last_observer = 0;
    std::int64_t session = 0;
    int feeding = 0;  // the world's calls into its engine under way: it is let go only at none
    bool letting_go = false;  // finished, its worker done: its engine goes a little later
};

// One acquire of a multi-lock: its members are taken one at a time in `order`, each acquire with
// what is left of the one deadline.
struct multi_acquire {
    std::vector<std::string> order;
    std::vector<std::uint64_t> members;  // the member machines started so far, in order
    std::optional<std::int64_t> deadline;  // none: untimed
};

}  // namespace zkr::sim::lock_world
