// The holds of every member of one multi-lock acquire, taken together: what a thread's hold of an
// interprocess_multi_lock and a multi_lock_hold (its async acquire's) both are. It refers to the
// members' drivers, not to their lock objects, so it may outlive the multi-lock.
#pragma once

#include "../queue/hold.hpp"
#include "../queue/lock_driver.hpp"

#include <zkr/detail/unique_function.hpp>
#include <zkr/hold_state.hpp>
#include <zkr/multi_op.hpp>
#include <zkr/results.hpp>

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zkr::detail {

class multi_hold {
public:
    /// The next member's hold (in acquire order, by path); its end requests stop_token()'s stop.
    void add(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h);
    /// Sends every member's delete at once; done gets the first failure in acquire order once
    /// all are answered (on the network thread, or inside this call without a member). Never
    /// throws: a delete that cannot be sent counts as system_error.
    void release(unique_function<void(const boost::system::error_code&)> done) noexcept;
    /// release(), waited for. Never on the network thread.
    boost::system::error_code release_and_wait() noexcept;
    /// release() whose outcome only the log hears (a destructor's, a failed acquire's).
    void release_in_background() noexcept;

    /// The worst of the members' states: lost if one is lost, doubtful if one is doubtful.
    hold_state state() const noexcept;
    std::stop_token stop_token() const noexcept { return stop_.get_token(); }
    std::vector<std::int64_t> fencing_tokens() const;
    std::vector<std::string> node_paths() const;
    /// ops in one transaction that commits only while every member's node is ours (hold::guarded_multi).
    std::vector<multi_result> guarded_multi(std::vector<multi_op> ops, boost::system::error_code& ec) const;
    /// The first member's lock path (for messages); empty without a member.
    std::string first_path() const { return members_.empty() ? std::string() : members_.front().first->path(); }
    zkr::client* client() const { return members_.empty() ? nullptr : &members_.front().first->get_client(); }

private:
    std::vector<std::pair<std::shared_ptr<lock_driver>, std::shared_ptr<hold>>> members_;
    std::stop_source stop_;
    std::list<std::stop_callback<std::function<void()>>> on_member_stop_;
};

/// The end of a throwing guarded_multi over the members: nothing for a clear ec; for
/// invalid_argument, that no one transaction can check members on several clients (`who`: the
/// class whose call it was); otherwise zkr::error with ec's message "in a guarded write".
void throw_guarded_multi_error(const boost::system::error_code& ec, const std::string& path, std::string_view who);

}  // namespace zkr::detail
