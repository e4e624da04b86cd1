/// @file
/// zkr::double_barrier: a set number of processes enter together and leave together (Curator's
/// DistributedDoubleBarrier).
#pragma once

#include <zkr/client.hpp>
#include <zkr/detail/asio.hpp>
#include <zkr/detail/unique_function.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace zkr {

/**
 * A double barrier: `member_count` members enter together (enter() returns once that many have
 * entered) and leave together (leave() returns once every member has left). Its layout is Curator's
 * DistributedDoubleBarrier's: each member is an ephemeral node `path/<id>`, and `path/ready` says
 * that enough have entered; zkr and Curator members form one barrier on one path.
 *
 * What it promises: nobody passes enter before `member_count` members were in at once; nobody
 * passes leave while a member that entered has not begun to leave (its node is still there); a
 * member that gives up (a timeout) deletes its node first, so it is never counted later (Curator
 * leaves it: CURATOR-80, CURATOR-318); a wake-up alone never lets a member through (Curator's did:
 * GH-1290). A path serves one round at a time: a member that enters before every member of the
 * last round has left may pass at once on that round's `ready`, as in Curator.
 *
 * Connection loss: the member goes on; a request that failed is sent again on reconnection.
 * Session expiry: an entered member makes its node again on the new session (members that list
 * the barrier while it is gone may leave without waiting for it: the one gap); an enter under
 * way fails with `session_expired`, since the others may have counted this member and gone through
 * meanwhile (enter again for a new round). When the client is closed a call ends with `closed`.
 *
 * Thread safety: one enter or leave at a time per object, sync or async (a second one is refused
 * with invalid_argument); any thread may call.
 */
class double_barrier {
public:
    /// Checks the arguments (zkr::error: invalid_path, or invalid_argument for a member_count of
    /// 0); nothing is sent. This member's id is a random UUID, as Curator's.
    double_barrier(client& c, std::string path, std::size_t member_count);
    /// A member that entered and has not left withdraws: its node is deleted (waiting at most
    /// 10 s for that). Never throws.
    ~double_barrier();
    double_barrier(const double_barrier&) = delete;
    double_barrier& operator=(const double_barrier&) = delete;

    /// Enters, and waits until `member_count` members have. Throws zkr::error: closed,
    /// session_expired (see above), invalid_argument when already entered.
    void enter();
    /// As enter(), waiting at most `timeout`: false on timeout, and this member withdraws (its
    /// node is deleted in the background; the next enter waits for that). invalid_argument for a
    /// negative timeout.
    bool enter(std::chrono::milliseconds timeout);
    /// Leaves, and waits until every member has left. Throws zkr::error: closed, invalid_argument
    /// unless entered.
    void leave();
    /// As leave(), waiting at most `timeout`: false on timeout, and this member's node is deleted
    /// (the others no longer wait for it).
    bool leave(std::chrono::milliseconds timeout);
    /// enter(timeout) without blocking: completes with (error_code, bool entered) on the handler's
    /// associated executor (default: the client's callback thread). On timeout (false) this
    /// member withdraws, as enter(timeout)'s does. Errors as enter()'s; invalid_argument for a
    /// negative timeout or a member not out; `closed` when the object is destroyed first.
    template <typename Token>
    auto async_enter(std::chrono::milliseconds timeout, Token&& token) {
        return async_call(true, timeout, std::forward<Token>(token));
    }
    /// leave(timeout) without blocking: completes with (error_code, bool left), as async_enter.
    template <typename Token>
    auto async_leave(std::chrono::milliseconds timeout, Token&& token) {
        return async_call(false, timeout, std::forward<Token>(token));
    }

    /// The barrier's path.
    const std::string& path() const noexcept { return path_; }
    /// This member's node name under path().
    const std::string& id() const noexcept { return id_; }

private:
    struct state;
    using call_done = detail::unique_function<void(const boost::system::error_code&, bool)>;
    template <typename Token>
    auto async_call(bool entering, std::chrono::milliseconds timeout, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, bool)>(
            [this, entering, timeout](auto handler) mutable {
                start_call(entering, timeout, detail::completion_on<true>(std::move(handler), callback_executor()));
            },
            token);
    }
    void start_call(bool entering, std::chrono::milliseconds timeout, call_done done);
    boost::asio::any_io_executor callback_executor() const;
    bool run(bool entering, std::optional<std::chrono::milliseconds> timeout);
    client& client_;
    std::string path_, id_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
