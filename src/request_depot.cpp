#include "request_depot.hpp"

#include "connection_internal.hpp"

#include <algorithm>

namespace zkr::detail {

// Spares kept at most: the records of a burst beyond it are freed.
constexpr std::size_t spare_limit = 64;

request_depot::~request_depot() = default;

void request_depot::recycler::operator()(inflight* f) const noexcept { depot->recycle(f); }

request_depot::record request_depot::new_record() {
    if (spare_.empty()) return record(new inflight, recycler{this});
    record f(spare_.back().release(), recycler{this});
    spare_.pop_back();
    return f;
}

void request_depot::recycle(inflight* f) noexcept {
    std::unique_ptr<inflight> owned(f);
    f->reset();
    if (spare_.size() < spare_limit) {
        try {
            spare_.push_back(std::move(owned));
        } catch (...) {  // no room to keep it: freed
        }
    }
}

inflight* request_depot::track(record f) {
    sent_.fetch_add(1, std::memory_order_relaxed);
    auto* raw = f.get();
    if (spare_nodes_.empty()) {
        inflight_.emplace(raw, std::move(f));
    } else {
        auto node = std::move(spare_nodes_.back());
        spare_nodes_.pop_back();
        node.key() = raw;
        node.mapped() = std::move(f);
        inflight_.insert(std::move(node));
    }
    return raw;
}

request_depot::record request_depot::take(const void* context) {
    auto it = inflight_.find(context);
    if (it == inflight_.end()) return record(nullptr, recycler{this});
    auto node = inflight_.extract(it);
    auto f = std::move(node.mapped());
    if (spare_nodes_.size() < spare_limit) spare_nodes_.push_back(std::move(node));
    return f;
}

std::vector<request_depot::op_ptr> request_depot::abandon_inflight() {
    std::vector<op_ptr> failed;
    for (auto& [key, f] : inflight_) {
        if (f->abandoned) continue;
        f->abandoned = true;
        if (f->op) failed.push_back(f->op);
    }
    return failed;
}

request_depot::inflight_table request_depot::take_inflight() { return std::exchange(inflight_, {}); }

void request_depot::wait(op_ptr op) { waiting_.push_back(std::move(op)); }

bool request_depot::stop_waiting(const op_ptr& op) {
    auto it = std::find(waiting_.begin(), waiting_.end(), op);
    if (it == waiting_.end()) return false;
    waiting_.erase(it);
    return true;
}

void request_depot::sleep(op_ptr op) { sleeping_.insert(std::move(op)); }

}  // namespace zkr::detail
