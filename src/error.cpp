#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <string>

namespace zkr {
namespace {

class zkr_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zkr"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::system_error: return "system error";
            case errc::runtime_inconsistency: return "runtime inconsistency (or rolled back in a multi)";
            case errc::data_inconsistency: return "data inconsistency";
            case errc::connection_loss: return "connection to the server lost";
            case errc::marshalling_error: return "error while marshalling or unmarshalling data";
            case errc::unimplemented: return "operation not implemented by the server";
            case errc::operation_timeout: return "operation timed out (no server traffic)";
            case errc::bad_arguments: return "bad arguments";
            case errc::invalid_state: return "invalid ZooKeeper handle state";
            case errc::new_config_no_quorum: return "no quorum of the new configuration";
            case errc::reconfig_in_progress: return "reconfiguration in progress";
            case errc::ssl_connection_error: return "SSL connection error";
            case errc::api_error: return "API error";
            case errc::no_node: return "node does not exist";
            case errc::no_auth: return "not authorized";
            case errc::bad_version: return "version conflict";
            case errc::no_children_for_ephemerals: return "ephemeral nodes may not have children";
            case errc::node_exists: return "node already exists";
            case errc::not_empty: return "node has children";
            case errc::session_expired: return "session expired";
            case errc::invalid_callback: return "invalid callback";
            case errc::invalid_acl: return "invalid ACL";
            case errc::auth_failed: return "authentication failed";
            case errc::closing: return "ZooKeeper handle is closing";
            case errc::nothing: return "no server responses to process";
            case errc::session_moved: return "session moved to another server";
            case errc::not_read_only: return "write request sent to a read-only server";
            case errc::ephemeral_on_local_session: return "ephemeral node on a local session";
            case errc::no_watcher: return "no such watcher";
            case errc::reconfig_disabled: return "reconfiguration disabled";
            case errc::session_closed_require_sasl_auth: return "session closed: server requires SASL";
            case errc::throttled_op: return "operation throttled by the server";
            case errc::not_connected: return "not connected to ZooKeeper (none in time, or the client was never start()ed)";
            case errc::invalid_path: return "invalid znode path";
            case errc::invalid_argument: return "invalid argument";
            case errc::closed: return "closed (the client, or the recipe object waited on)";
            case errc::lock_not_held: return "lock not held";
            case errc::lock_lost: return "lock lost (session lost or node deleted)";
            case errc::data_too_large: return "node data exceeds the server's limit";
            case errc::max_mismatch: return "processes disagree on the semaphore's maximum";
            case errc::cancelled: return "cancelled";
            case errc::lock_kind_mismatch: return "a lock of another kind (mutex, semaphore or read-write lock) holds or waits on this path";
            case errc::would_deadlock: return "the acquire would wait for a hold of its own caller";
        }
        return "unknown zkr error " + std::to_string(ev);
    }
};

std::string compose(const boost::system::error_code& ec, const std::string& path, const std::string& what) {
    std::string s = what.empty() ? ec.message() : what;
    // Shown escaped, as everywhere: a NUL would end the message there, a control byte garble it.
    if (const auto shown = printable_path(path); !path.empty() && s.find(shown) == std::string::npos)
        s += " [path: " + shown + "]";
    // The code's own message once: most messages say it already, the others get it appended.
    if (const auto m = ec.message(); s.find(m) == std::string::npos) s += ": " + m;
    return s;
}

}  // namespace

const boost::system::error_category& error_category() noexcept {
    static const zkr_category category;
    return category;
}

bool is_retryable(const boost::system::error_code& ec) noexcept {
    return ec == errc::connection_loss || ec == errc::operation_timeout || ec == errc::session_moved ||
           ec == errc::session_expired || ec == errc::not_connected;
}

error::error(boost::system::error_code ec, std::string path, const std::string& what)
    : boost::system::system_error(ec), path_(std::move(path)), message_(compose(ec, path_, what)) {}

const char* error::what() const noexcept { return message_.what(); }

void detail::throw_if(const boost::system::error_code& ec, std::string_view path, std::string_view what) {
    if (ec) throw zkr::error(ec, std::string(path), std::string(what));
}

}  // namespace zkr
