// Deterministic simulation of the lock recipes: K clients run the real lock state machine
// (recipes/queue/lock_machine.hpp), through the face the engine drives it by
// (recipes/queue/zk_lock_machine.hpp: ZooKeeper's ops out, its replies and events in), on the real
// engine (recipes/core/basic_zk_engine.hpp, the base of lock_engine, through a port onto the
// world's simulated client), against the in-memory ZooKeeper, with connection loss, session expiry, abandoned sessions, server
// restarts and the deletes they lose injected, all chosen by one seed on a simulated clock. A
// checker looks at every step.
#pragma once

#include "../../recipes/queue/hold_cache_machine.hpp"
#include "../../recipes/queue/zk_lock_machine.hpp"
#include "verdict.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkr::sim {

/// The machine as the world drives it, whatever its rules (the tests plant faults through them).
class machine {
public:
    virtual ~machine() = default;
    virtual detail::zk_lock_actions& resume(detail::zk_lock_input&& e) = 0;
    virtual detail::lock_phase phase() const = 0;
    virtual std::optional<hold_state> state() const = 0;  ///< once granted
    virtual const std::string& node_path() const = 0;
    virtual std::int64_t hold_session() const = 0;
    virtual std::int64_t token() const = 0;
    virtual bool awaits(detail::lock_ticket t) const = 0;  ///< the node's czxid (its identity: a path can come back)
    virtual bool finished() const = 0;
    virtual detail::zk::ticket deadline_ticket() const = 0;
};

using machine_factory = std::function<std::unique_ptr<machine>(detail::zk_lock_machine::config)>;

template <typename Rules>
machine_factory machines_with() {
    struct adapter final : machine {
        explicit adapter(detail::zk_lock_machine::config c)
            : m(typename detail::basic_zk_lock_machine<Rules>::config{
                  {c.decisions.rule, c.decisions.timeout, c.decisions.context, c.decisions.revocable},
                  std::move(c.lock_path), std::move(c.create_path), std::move(c.data), c.mode, std::move(c.forgotten)}) {}
        detail::zk_lock_actions& resume(detail::zk_lock_input&& e) override { return m.resume(std::move(e)); }
        detail::lock_phase phase() const override { return m.decisions().phase(); }
        std::optional<hold_state> state() const override { return m.decisions().state(); }
        const std::string& node_path() const override { return m.decisions().node_path(); }
        std::int64_t hold_session() const override { return m.decisions().hold_session(); }
        std::int64_t token() const override { return m.decisions().token(); }
        bool awaits(detail::lock_ticket t) const override { return m.decisions().awaits(t); }
        bool finished() const override { return m.finished(); }
        detail::zk::ticket deadline_ticket() const override { return m.deadline_ticket(); }
        detail::basic_zk_lock_machine<Rules> m;
    };
    return [](detail::zk_lock_machine::config c) { return std::make_unique<adapter>(std::move(c)); };
}

/// The shipped machine (basic_lock_machine<lock_rules>), instantiated in lock_sim.cpp: the coverage
/// check measures that instantiation alone, not the planted faults' (test/sim/coverage).
machine_factory shipped_machines();

/// shared_semaphore: a semaphore whose maximum is a shared count that the world changes while
/// holders hold, sending reevaluate to every live machine as the driver does. read_write: the
/// read-write lock's two rules (recipes/queue/read_write_rule.hpp) on one queue, each acquire a reader or
/// a writer; a writer at the end of its hold now and then downgrades (takes the read lock, then
/// releases the write lock). latch: a leader latch's rule (one holder, "latch-" nodes, released by
/// the delete alone: Curator's LeaderLatch waits for NodeDeleted). revocable_mutex: the rule of a
/// revocable mutex and of the leader selector (one holder, released by the delete alone, so that
/// an operator's write to a holder's node, as a revocation request, is neither a release to the
/// waiter behind nor a loss to the holder: the checker keeps counting such a holder). Half its
/// acquires are revocable machines, whose holds last until a revoker's request reaches them (the
/// revoker writes it again now and then while they hold): a request never told leaves the worker
/// holding for ever, a request told that nobody wrote to the node, or told twice, is a violation.
/// multi_lock: interprocess_multi_lock over mutexes on three paths; each acquire lists two or
/// three of them in its own order and takes them one at a time in the order the recipe takes them
/// (recipes/locks/multi_lock_order.hpp), with one deadline for all, releasing what it took on failure.
/// curator_semaphore: the lease rule of a semaphore in Curator's layout (one node per lease, a node
/// holds with fewer than max ahead), with no inner mutex at all: the safety of the positional rule
/// must not rest on it (a session lost while waiting queues the lease again without it).
/// cached_mutex: a mutex whose clients mostly cache (mutex_options::cache_hold, recipes/queue/hold_cache_machine.hpp):
/// a worker's release keeps the node (listing the folder with a children watch first), its next
/// acquire takes it back with no request, and the watch lets it go; drawn only by
/// draw_cached_schedule, so that the other schedules are what they were.
enum class recipe { mutex, semaphore_mutex, semaphore, shared_semaphore, read_write, latch, revocable_mutex, multi_lock, curator_semaphore, cached_mutex };
std::string_view to_string(recipe r) noexcept;

/// One schedule, all drawn from its seed.
struct schedule {
    std::uint64_t seed = 0;
    recipe kind = recipe::mutex;
    int clients = 2;
    int max_holders = 1;  ///< the semaphore's leases per lock path (1 for the others; the most a shared count reaches;
                          ///< as many as clients run acquires for readers); a fixed semaphore's
                          ///< acquires ask for 1 to max_holders of them
    int attempts = 3;     ///< acquires per client
    int faults = 0;       ///< faults injected before the network heals
};
schedule draw_schedule(std::uint64_t seed);
/// A cached_mutex schedule: draw_schedule's faults; 2 to 4 clients, 3 to 6 attempts each.
schedule draw_cached_schedule(std::uint64_t seed);

/// Lock caching's decisions as the world drives them (recipes/queue/hold_cache_machine.hpp): the
/// shipped machine; the tests plant faults through a subclass.
class cache_decisions {
public:
    using action = detail::hold_cache_machine::action;
    using phase = detail::hold_cache_machine::phase;
    virtual ~cache_decisions() = default;
    virtual action released(bool fresh, bool lent_one) { return m_.released(fresh, lent_one); }
    virtual action listed(bool alone) { return m_.listed(alone); }
    virtual action changed() { return m_.changed(); }
    virtual action acquire(bool fresh) { return m_.acquire(fresh); }
    virtual action close() { return m_.close(); }
    phase current() const { return m_.current(); }

protected:
    detail::hold_cache_machine m_;
};
using cache_factory = std::function<std::unique_ptr<cache_decisions>()>;

struct outcome : verdict {
    int grants = 0;
    int faults = 0;
    std::map<std::string, long> by_kind;  ///< the faults that took effect, by kind
    long cache_grants = 0;  ///< cached_mutex: holds taken back from a cache with no request
};

/// Runs one schedule. traced: keep the last steps as text (slower; used to replay a failure).
/// caches: for a cached_mutex schedule (default: the shipped decisions).
outcome run(const schedule& s, const machine_factory& machines, bool traced = false, const cache_factory& caches = {});

}  // namespace zkr::sim
