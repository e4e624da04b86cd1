// The read-write lock: two mutexes on one path, each with its side of the read-write rule and a
// plan that knows the other side's holds (the downgrade, the refused upgrade).
#include <zkr/interprocess_read_write_lock.hpp>

#include "../queue/lock_core.hpp"
#include "../queue/read_write_rule.hpp"

#include <zkr/path.hpp>

namespace zkr {

interprocess_read_write_lock::interprocess_read_write_lock(client& c, std::string path)
    : write_(c, path, std::make_shared<read_write_rule>(read_write_rule::side::write),
             [this](std::thread::id owner, detail::acquire_request&) {
                 // Only the read lock: the write node would queue behind our own read node and
                 // never reach the head.
                 if (read_.holds(owner))
                     throw zkr::error(make_error_code(errc::would_deadlock), read_.core_->path(),
                                      "this thread holds the read lock: release it before taking the write lock "
                                      "(an upgrade would wait for itself)");
             }),
      read_(c, std::move(path), std::make_shared<read_write_rule>(read_write_rule::side::read),
            [this](std::thread::id owner, detail::acquire_request& req) {
                // The downgrade: behind our own writer, at its place in the queue.
                const auto writer = write_.valid_node_of(owner);
                if (writer.empty()) return;
                const auto name = std::string(node_name(writer));
                req.held_by_us = {name};
                req.sequence = read_write_sequence(name);
            }) {}

interprocess_read_write_lock::interprocess_read_write_lock(client& c, std::string path, std::function<void()> on_revoke)
    : interprocess_read_write_lock(c, std::move(path)) {
    if (!on_revoke)
        throw zkr::error(make_error_code(errc::invalid_argument), read_.core_->path(),
                         "interprocess_read_write_lock: the revocation listener is empty");
    write_.core_->make_revocable(on_revoke);
    read_.core_->make_revocable(std::move(on_revoke));
}

interprocess_read_write_lock::~interprocess_read_write_lock() = default;

}  // namespace zkr
