// The connection's requests, by where each one is:
//   - in flight: sent through the C client, each with a record (`inflight`) that is its C
//     callback's context until the callback runs or the handle closes. Records are used again
//     (a steady stream of requests allocates neither records nor the table's nodes);
//   - waiting for a connection (each with its connection_timeout running);
//   - sleeping before a retry (each with its retry policy's sleep running).
// What happens to a request next (sent, retried, failed) is the connection's decision; the depot
// keeps where each one is, so that an end (a dropped connection, a closed handle, the client's
// close) reaches every request of a kind at once. Network thread only, except sent().
// Unit-tested without a server (request_depot_test.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace zkr::detail {

struct operation;  // connection_internal.hpp
struct inflight;

class request_depot {
public:
    using op_ptr = std::shared_ptr<operation>;
    /// A record goes back to its depot when let go, to be used again.
    struct recycler {
        request_depot* depot = nullptr;
        void operator()(inflight* f) const noexcept;
    };
    using record = std::unique_ptr<inflight, recycler>;
    using inflight_table = std::unordered_map<const void*, record>;

    request_depot() = default;
    ~request_depot();
    request_depot(const request_depot&) = delete;
    request_depot& operator=(const request_depot&) = delete;

    // ---- in flight
    /// A blank record (a spare one when there is one).
    record new_record();
    /// The request is sent: its record is now its C callback's context (counted in sent()).
    inflight* track(record f);
    /// Its callback runs (or the call that was to send it failed): the record, null when the
    /// depot no longer has it (the handle closed meanwhile).
    record take(const void* context);
    /// The connection dropped: the C client fails each request in flight, but only after it
    /// reconnects. Each is marked abandoned now (its late callback only frees its record), and
    /// their operations are returned, for the connection to retry or fail at once.
    std::vector<op_ptr> abandon_inflight();
    /// The handle closed: the C client calls nothing more. Every record, for the connection to
    /// settle.
    inflight_table take_inflight();
    /// Requests sent so far (any thread).
    std::uint64_t sent() const noexcept { return sent_.load(std::memory_order_relaxed); }

    // ---- waiting for a connection
    void wait(op_ptr op);
    /// Its wait ended (the connection timeout): false if it no longer waits.
    bool stop_waiting(const op_ptr& op);
    std::deque<op_ptr> take_waiting() { return std::exchange(waiting_, {}); }

    // ---- sleeping before a retry
    void sleep(op_ptr op);
    /// Its sleep ended: false if it no longer sleeps (the close took it).
    bool wake(const op_ptr& op) { return sleeping_.erase(op) > 0; }
    std::unordered_set<op_ptr> take_sleeping() { return std::exchange(sleeping_, {}); }

private:
    void recycle(inflight* f) noexcept;

    // Spare records and table nodes, declared before the table: the records it still holds when
    // the depot ends are recycled into spare_ as it goes.
    std::vector<std::unique_ptr<inflight>> spare_;
    inflight_table inflight_;
    std::vector<inflight_table::node_type> spare_nodes_;
    std::deque<op_ptr> waiting_;
    std::unordered_set<op_ptr> sleeping_;
    std::atomic<std::uint64_t> sent_{0};
};

}  // namespace zkr::detail
