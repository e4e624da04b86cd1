// The decisions of one distributed_atomic_long operation, as a value: events in, actions out, on
// zk_ops. The value is Curator's DistributedAtomicLong node: 8 big-endian bytes (or 4, its
// DistributedAtomicInteger's; missing or empty reads as 0), changed by a versioned write after a
// read, tried again on a conflict, and, once the optimistic tries run out, under a lock (Curator's
// PromotedToLock) when one is configured.
//
// What Curator gets wrong (CURATOR-584): a write whose reply is lost is sent again, fails on the
// version its first copy changed, and the loop applies the change a second time. Here every write
// is a multi that also sets this object's receipt node (PATH/<receipt>, ours alone) at the version
// we last knew, with the attempt's serial number as data (a receipt made again, after it went,
// gets a new name, so that no write sent for the old one can take on the new). A write either applied with its receipt
// or not at all, and at most one write per receipt version applies, so after any failure the
// receipt says exactly whether, and which, of this operation's attempts took: no change is lost
// or applied twice, whatever was resent. The receipt is ephemeral, or (durable_receipt) a TTL
// node that outlives a session loss. An ephemeral receipt dies with its session: a write whose
// reply was lost with the session is then judged by the value's version, and when someone has
// written since, its outcome is unknown: the operation fails with session_expired rather than
// guess (Curator guesses "not applied").
//
// Under the lock, every write also checks the lock's node: a write resent on a new session, after
// the lock died with the old one, fails instead of running outside the lock.
#pragma once

#include "../core/zk_ops.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace zkr::detail {

/// The big-endian bytes of a two's-complement value: 8 (Curator's DistributedAtomicLong) or 4
/// (its DistributedAtomicInteger; the value must fit in 32 bits).
std::string long_to_data(std::int64_t value, unsigned width = 8);
/// The value `data` holds: `width` bytes, or 0 when empty (as Curator reads it); nullopt otherwise.
std::optional<std::int64_t> long_from_data(std::string_view data, unsigned width = 8);

/// One operation.
struct atomic_request {
    enum class kind { get, add, set, compare_and_set } what = kind::get;
    std::int64_t operand = 0;   ///< add: the amount; set, compare_and_set: the new value
    std::int64_t expected = 0;  ///< compare_and_set
};

struct atomic_config {
    std::string path;                         ///< the value's node
    std::string receipt;                      ///< the prefix of this object's receipt nodes (children of path): each is made under a new name, prefix + 1, 2, ...
    std::chrono::milliseconds receipt_ttl{0}; ///< 0: ephemeral; else persistent with this TTL
    unsigned optimistic_tries = 10;           ///< add and set; compare_and_set tries once
    std::chrono::milliseconds backoff{2};     ///< after a conflict; doubled per try, at most 64x
    bool promote = false;                     ///< then under a lock (lock_needed)
    unsigned promoted_tries = 1;
    unsigned width = 8;                       ///< the value's bytes: 8 (a long) or 4 (an integer)
};

namespace atomic_in {
/// Start an operation (when idle). session: the client's now.
struct begin {
    atomic_request request;
    std::int64_t session = 0;
};
/// The promotion lock is held: its node (ephemeral, of `session`).
struct lock_granted {
    std::int64_t session = 0;
    std::string node;
};
/// The promotion lock was not taken: timed out (ec empty) or failed.
struct lock_refused {
    boost::system::error_code ec;
};
}  // namespace atomic_in

namespace atomic_out {
/// Take the promotion lock (again, after its session was lost).
struct lock_needed {};
/// The operation is over: release the promotion lock.
struct lock_done {};
/// The operation's answer. ec empty: an answer, succeeded or not (a conflict, a compare that
/// differed, tries used up); ec set: it could not be answered (reason says why).
struct finished {
    boost::system::error_code ec;
    std::string reason;
    bool succeeded = false;
    std::int64_t pre = 0, post = 0;
    unsigned optimistic_tries = 0, promoted_tries = 0;
    std::uint64_t receipts_made = 0;  ///< receipt names used so far (prefix + 1 .. this)
};
}  // namespace atomic_out

class atomic_long_machine {
public:
    using input = std::variant<atomic_in::begin, atomic_in::lock_granted, atomic_in::lock_refused, zk::reply, zk::watch_fired,
                               zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, atomic_out::lock_needed, atomic_out::lock_done, atomic_out::finished>;

    explicit atomic_long_machine(atomic_config config) : cfg_(std::move(config)) {}

    std::vector<action> resume(const input& e);

    bool busy() const noexcept { return step_ != step::idle; }
    /// Under the promotion lock: its writes check the lock's node.
    bool promoted() const noexcept { return promoted_; }

private:
    enum class step { idle, reading, making_value, making_receipt, writing, fencing, sleeping, waiting_connection, locking };

    void on(const atomic_in::begin&);
    void on(const atomic_in::lock_granted&);
    void on(const atomic_in::lock_refused&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired&) {}  // (it sets no watch)
    void on(const zk::timer_due& t);
    void on(const zk::connection_changed& c);

    void read();
    void read_value();
    void decide();
    void write(std::int64_t pre, std::int64_t post, std::int32_t version);
    void after_conflict();
    void await_connection();
    bool receipt_known() const;
    void ask_for_lock();
    void fence();
    void give_up(std::int64_t pre);  // an answer of "not succeeded"
    std::string bits() const { return std::to_string(8 * cfg_.width) + "-bit"; }  // for messages
    void finish(atomic_out::finished f);
    void fail(boost::system::error_code ec, std::string reason);
    zk::ticket send(zk::op op);

    atomic_config cfg_;
    std::vector<action>* out_ = nullptr;
    zk::ticket last_ticket_ = 0;
    step step_ = step::idle;
    atomic_request req_;
    bool connected_ = true;
    std::int64_t session_ = 0;

    // The reads of one round (the value, and the receipt when needed), kept until both are in.
    zk::ticket value_read_ = 0, receipt_read_ = 0, pending_ = 0, timer_ = 0;
    std::optional<zk::reply> value_reply_, receipt_reply_;

    // The receipt: its name (empty: none made, or found gone), and its version when known on
    // `receipt_session_` (an ephemeral one dies with it).
    std::string receipt_;
    std::uint64_t generation_ = 0;  // names made so far
    std::int32_t receipt_version_ = -1;
    std::int64_t receipt_session_ = 0;
    std::uint64_t serial_ = 0;  // the last attempt's number (the receipt's data)

    // This operation's attempts whose writes were sent: serial -> (pre, post).
    std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> attempts_;
    bool unresolved_ = false;  // a write was sent and whether it took is not known yet
    bool in_doubt_ = false;    // ... and its request may still be applied (its reply was a connection failure)
    std::int32_t last_base_ = -1;  // the value's version the last attempt wrote over
    std::int64_t last_czxid_ = 0;
    std::int32_t last_receipt_base_ = -1;  // ... and the receipt's
    std::int64_t last_value_ = 0;          // the value last read
    std::int32_t value_version_ = -1;
    std::int64_t value_czxid_ = 0;
    unsigned tries_ = 0, promoted_tries_ = 0;
    bool promoted_ = false;
    std::int64_t lock_session_ = 0;
    std::string lock_node_;
};

}  // namespace zkr::detail
