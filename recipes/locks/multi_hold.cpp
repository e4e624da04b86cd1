#include "multi_hold.hpp"

#include <zkr/error.hpp>

#include <condition_variable>
#include <mutex>

namespace zkr::detail {

using boost::system::error_code;

void multi_hold::add(std::shared_ptr<lock_driver> driver, std::shared_ptr<hold> h) {
    on_member_stop_.emplace_back(h->stop_token(), [s = stop_]() mutable { s.request_stop(); });
    members_.emplace_back(std::move(driver), std::move(h));
}

void multi_hold::release(unique_function<void(const error_code&)> done) noexcept {
    struct answers {
        std::mutex m;
        std::size_t left = 0;
        std::vector<error_code> outcomes;
        unique_function<void(const error_code&)> done;
        std::stop_source stop;
    };
    std::shared_ptr<answers> a;
    try {
        a = std::make_shared<answers>();
        a->left = members_.size();
        a->outcomes.resize(members_.size());
    } catch (...) {  // out of memory: the nodes stay with the session
        stop_.request_stop();
        return done(make_error_code(errc::system_error));
    }
    if (members_.empty()) {
        stop_.request_stop();
        return done({});
    }
    a->done = std::move(done);
    a->stop = stop_;
    // The last answer ends the hold, then tells done the first failure in acquire order.
    auto answered = [a](std::size_t i, const error_code& ec) {
        {
            std::lock_guard lock(a->m);
            a->outcomes[i] = ec;
            if (--a->left > 0) return;
        }
        a->stop.request_stop();
        error_code first;
        for (const auto& o : a->outcomes)
            if (o && !first) first = o;
        a->done(first);
    };
    for (std::size_t i = 0; i < members_.size(); ++i) {
        try {
            members_[i].first->release(members_[i].second, [answered, i](const error_code& ec) { answered(i, ec); });
        } catch (const std::exception&) {  // out of memory: that node stays with the session
            answered(i, make_error_code(errc::system_error));
        }
    }
}

error_code multi_hold::release_and_wait() noexcept {
    struct waiting {
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        error_code ec;
    };
    std::shared_ptr<waiting> w;
    try {
        w = std::make_shared<waiting>();
    } catch (...) {
        return make_error_code(errc::system_error);
    }
    release([w](const error_code& ec) {
        std::lock_guard lock(w->m);
        w->ec = ec;
        w->done = true;
        w->cv.notify_all();
    });
    std::unique_lock lock(w->m);
    w->cv.wait(lock, [&] { return w->done; });
    return w->ec;
}

void multi_hold::release_in_background() noexcept {
    auto* c = client();
    const auto path = first_path();
    release([c, path](const error_code& ec) {
        if (ec && c) log_quiet_release(*c, path, ec);
    });
}

hold_state multi_hold::state() const noexcept {
    hold_state worst = hold_state::held;
    for (const auto& [driver, h] : members_) {
        const auto s = h->caller_state();
        if (s == hold_state::lost) return s;
        if (s != hold_state::held && worst == hold_state::held) worst = s;
    }
    return worst;
}

std::vector<std::int64_t> multi_hold::fencing_tokens() const {
    std::vector<std::int64_t> tokens;
    for (const auto& [driver, h] : members_) tokens.push_back(h->fencing_token());
    return tokens;
}

std::vector<std::string> multi_hold::node_paths() const {
    std::vector<std::string> nodes;
    for (const auto& [driver, h] : members_) nodes.push_back(h->node_path());
    return nodes;
}

std::vector<multi_result> multi_hold::guarded_multi(std::vector<multi_op> ops, error_code& ec) const {
    std::vector<const hold*> holds;
    for (const auto& [driver, h] : members_) holds.push_back(h.get());
    return hold::guarded_multi(holds, std::move(ops), ec);
}

void throw_guarded_multi_error(const error_code& ec, const std::string& path, std::string_view who) {
    if (ec == errc::invalid_argument)
        throw_if(ec, path, std::string(who) + ": the members are on more than one client, so no one transaction can check them all");
    throw_if(ec, path, ec.message() + " in a guarded write");
}

}  // namespace zkr::detail
