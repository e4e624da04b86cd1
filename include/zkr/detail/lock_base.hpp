// What the lock recipes share: the driver, node data, hold listeners, guarded writes.
#pragma once

#include <zkr/detail/lock_driver.hpp>

#include <mutex>

namespace zkr::detail {

class lock_base {
public:
    lock_base(zkr::client& c, std::string path, std::string lock_name, std::shared_ptr<const lock_rule> rule);
    lock_base(const lock_base&) = delete;
    lock_base& operator=(const lock_base&) = delete;

    void set_node_data(std::string data);
    std::vector<std::string> participant_nodes() const;
    /// listener(state) runs on the client's callback thread for every change of every hold that
    /// this object takes from now on.
    state_subscription add_hold_listener(std::function<void(hold_state)> listener);

protected:
    /// Blocks; null without error when the timeout passed. Attaches the object's listeners.
    std::shared_ptr<hold> acquire_hold(std::optional<std::chrono::milliseconds> timeout,
                                       std::function<void(const std::string&)> on_queued = {});
    void attach_listeners(const std::shared_ptr<hold>& h);
    std::string node_data() const;
    static std::optional<std::chrono::milliseconds> checked_timeout(std::chrono::milliseconds t);

    std::shared_ptr<lock_driver> driver_;

private:
    mutable std::mutex base_mutex_;
    std::string data_ = default_node_data();
    struct listeners;
    std::shared_ptr<listeners> listeners_;
};

}  // namespace zkr::detail
