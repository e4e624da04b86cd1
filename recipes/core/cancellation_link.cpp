#include <zkr/cancellation_link.hpp>

#include <boost/asio/post.hpp>

namespace zkr {

// What a posted cancel may still reach: nothing once the link is gone.
struct cancellation_link::target {
    std::mutex m;
    bool attached = true;
    boost::asio::any_io_executor ex;
    std::function<void()> cancel;
};

cancellation_link::cancellation_link(std::stop_token token, boost::asio::any_io_executor ex, std::function<void()> cancel)
    : target_(std::make_shared<target>()),
      callback_(std::move(token), poster{[&] {
                    target_->ex = std::move(ex);
                    target_->cancel = std::move(cancel);
                    return target_;
                }()}) {}

cancellation_link::~cancellation_link() {
    std::lock_guard lock(target_->m);
    target_->attached = false;
}

void cancellation_link::poster::operator()() const noexcept {
    try {
        boost::asio::post(t->ex, [t = t] {
            std::lock_guard lock(t->m);
            if (t->attached && t->cancel) t->cancel();
        });
    } catch (...) {  // the executor is shut down: nothing left to cancel
    }
}

}  // namespace zkr
