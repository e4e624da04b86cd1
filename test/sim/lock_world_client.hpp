// The lock world's records: what it adds to each client (whose connection is the shared simulated
// client's, sim_clients.hpp), the world's timers, and each acquisition the world runs. Included by
// lock_sim.cpp alone.
#pragma once

#include "lock_sim.hpp"
#include "../../recipes/queue/lock_rule.hpp"
#include "sim_clients.hpp"
#include "sim_zookeeper.hpp"

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

// What the world adds to a client (its connection is sim_clients'): its workers, its lock cache,
// and the calls its callers make.
struct client {
    int id = 0;
    bool closed = false;
    // The workers: acquire, hold a while, release, `attempts` times in all. Some clients run two at
    // once on their one session (two lock objects, or two threads, on one client).
    int parallel = 1;
    std::map<std::uint64_t, bool> running;  // the attempts in progress: machine -> holding
    int attempts_started = 0;
    int attempts_done = 0;
    std::int64_t rate_ms = -1;  // the simulated millisecond of the requests counted in rate_count
    int rate_count = 0;
    // The callers' calls into the engines (a release, the driver's reevaluate), as they arrive:
    // after the event at hand. (machine, call)
    std::deque<std::pair<std::uint64_t, zk_lock_input>> calls;
    // cached_mutex: the client's lock cache (null: it does not cache), the machine it keeps or
    // lent (0: none), and its listing in flight (the ticket its answer must carry).
    std::unique_ptr<cache_decisions> cache;
    std::uint64_t kept = 0;
    bool lent = false;
    lock_ticket cache_listing = 0;
};

// The tag of what a client's lock cache sends and hears (its listing and children watch), apart
// from its machines' (each machine's id) and from the client's connection news (0).
constexpr std::uint64_t cache_who = ~std::uint64_t{0};

struct timer {
    enum kind { engine, hold_end, next_attempt, expire_session, open_session, cancel, revoke, let_go } what;
    int client = 0;
    std::uint64_t machine = 0;
    lock_ticket ticket = 0;
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
