// Error codes and the exception type of zkr.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace zkr {

/// Error codes. The ZooKeeper codes keep their numeric values (the C client's ZOK..ZTHROTTLEDOP),
/// zkr's own codes are positive and start at 1000.
enum class errc : int {
    // ZooKeeper's codes.
    system_error = -1,
    runtime_inconsistency = -2,
    data_inconsistency = -3,
    connection_loss = -4,
    marshalling_error = -5,
    unimplemented = -6,
    operation_timeout = -7,
    bad_arguments = -8,
    invalid_state = -9,
    new_config_no_quorum = -13,
    reconfig_in_progress = -14,
    ssl_connection_error = -15,
    api_error = -100,
    no_node = -101,
    no_auth = -102,
    bad_version = -103,
    no_children_for_ephemerals = -108,
    node_exists = -110,
    not_empty = -111,
    session_expired = -112,
    invalid_callback = -113,
    invalid_acl = -114,
    auth_failed = -115,
    closing = -116,
    nothing = -117,
    session_moved = -118,
    not_read_only = -119,
    ephemeral_on_local_session = -120,
    no_watcher = -121,
    reconfig_disabled = -123,
    session_closed_require_sasl_auth = -124,
    throttled_op = -127,

    // zkr's own codes. (A passed deadline is no error: acquires return false or an empty result.)
    not_connected = 1001,  ///< No connection to ZooKeeper within the connection timeout, none to try on
                           ///< (try_lock), or the client was never start()ed (the message says so).
    invalid_path,          ///< A znode path was rejected before anything was sent.
    invalid_argument,      ///< Another argument was rejected before anything was sent.
    closed,                ///< The client was closed.
    lock_not_held,         ///< Release or guarded write without holding the lock.
    lock_lost,             ///< The hold ended on its own: session lost or node deleted.
    data_too_large,        ///< Node data over the 1 MiB ZooKeeper limit (jute.maxbuffer).
    max_mismatch,          ///< Processes disagree on a semaphore's maximum.
    cancelled,             ///< The operation was cancelled by the caller.
    lock_kind_mismatch,    ///< Two kinds of lock (mutex, semaphore, read-write lock) on one path: they would not exclude each other.
    would_deadlock,        ///< The acquire would wait for a hold of its own caller (a read lock taken up to the write lock).
};

/// The error category of zkr::errc ("zkr").
const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Errors that a retry may cure: connection loss, operation timeout, session moved and session
/// expired (the latter as Curator does; wrap a policy in session_failed_retry_policy to exclude it).
bool is_retryable(const boost::system::error_code& ec) noexcept;

/// The one exception type of zkr: an error code, the znode path it concerns (may be empty)
/// and a message saying what was wrong.
class error : public boost::system::system_error {
public:
    /// ec: what failed; path: the znode it concerns (may be empty); what: what was wrong.
    error(boost::system::error_code ec, std::string path, const std::string& what = {});
    /// The znode path the error concerns (may be empty).
    const std::string& path() const noexcept { return path_; }
    /// What went wrong, the path, and the code's message, each once.
    const char* what() const noexcept override;

private:
    std::string path_;
    // Our own text: Boost 1.78 and later build system_error's what() at construction, with the
    // code's message appended, which would say it twice. A runtime_error copies without throwing.
    std::runtime_error message_;
};

namespace detail {
/// Throws zkr::error when ec is set; the helper behind every throwing overload.
void throw_if(const boost::system::error_code& ec, std::string_view path, std::string_view what = {});
}  // namespace detail

}  // namespace zkr

namespace boost::system {
template <>
struct is_error_code_enum<zkr::errc> : std::true_type {};
}  // namespace boost::system
