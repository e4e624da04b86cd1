#include "curator_semaphore.hpp"

#include "../core/step_deadline.hpp"

#include <utility>

namespace zkr::detail {

using boost::system::error_code;

namespace {

// One acquire of the layout, kept alive by the completions it waits for.
class gated_acquire : public std::enable_shared_from_this<gated_acquire> {
public:
    gated_acquire(std::shared_ptr<lock_driver> gate, std::shared_ptr<lock_driver> leases, std::int32_t qty,
                  std::optional<std::chrono::milliseconds> timeout, std::string data,
                  std::function<void(const std::shared_ptr<hold>&)> attach, gated_acquire_handler done)
        : gate_(std::move(gate)),
          leases_(std::move(leases)),
          qty_(static_cast<std::size_t>(qty)),
          deadline_(timeout),
          gate_cancellations_(gate_->cancellations()),
          lease_cancellations_(leases_->cancellations()),
          data_(std::move(data)),
          attach_(std::move(attach)),
          done_(std::move(done)) {}

    void start() {
        gate_->acquire(request(gate_cancellations_), [self = shared_from_this()](const error_code& ec, std::shared_ptr<hold> h) {
            self->gate_answered(ec, std::move(h));
        });
    }

private:
    // Each step gets what is left of the one deadline (none left: it tries once), and ends at once
    // if the semaphore's cancel() came since the acquire began.
    acquire_request request(std::uint64_t cancellations) const {
        acquire_request r;
        r.data = data_;
        r.begun_at_cancellation = cancellations;
        r.timeout = deadline_.left();
        return r;
    }

    void gate_answered(const error_code& ec, std::shared_ptr<hold> h) {
        if (ec || !h) return finish(ec);
        gate_hold_ = std::move(h);
        next_lease();
    }

    void next_lease() {
        if (taken_.size() == qty_) return finish({});
        leases_->acquire(request(lease_cancellations_), [self = shared_from_this()](const error_code& ec, std::shared_ptr<hold> h) {
            self->lease_answered(ec, std::move(h));
        });
    }

    void lease_answered(const error_code& ec, std::shared_ptr<hold> h) {
        if (ec || !h) {
            // All or nothing: the leases of this acquire go back (guaranteed deletes).
            for (const auto& taken : std::exchange(taken_, {})) leases_->release(taken, [](const error_code&) {});
            return finish(ec);
        }
        taken_.push_back(std::move(h));
        next_lease();
    }

    // The inner mutex goes in every case; the caller need not wait for its delete (the leases are
    // held, or returned), and the next acquirer's wake-up is that delete.
    void finish(const error_code& ec) {
        if (gate_hold_) gate_->release(std::exchange(gate_hold_, nullptr), [](const error_code&) {});
        for (const auto& h : taken_) attach_(h);
        auto done = std::move(done_);
        done(ec, std::exchange(taken_, {}));
    }

    std::shared_ptr<lock_driver> gate_, leases_;
    std::size_t qty_;
    step_deadline deadline_;
    std::uint64_t gate_cancellations_, lease_cancellations_;  // the drivers' cancel() counts when it began
    std::string data_;
    std::function<void(const std::shared_ptr<hold>&)> attach_;
    gated_acquire_handler done_;
    std::shared_ptr<hold> gate_hold_;
    std::vector<std::shared_ptr<hold>> taken_;
};

}  // namespace

void acquire_gated(std::shared_ptr<lock_driver> gate, std::shared_ptr<lock_driver> leases, std::int32_t qty,
                   std::optional<std::chrono::milliseconds> timeout, std::string data,
                   std::function<void(const std::shared_ptr<hold>&)> attach, gated_acquire_handler done) {
    std::make_shared<gated_acquire>(std::move(gate), std::move(leases), qty, timeout, std::move(data), std::move(attach),
                                    std::move(done))
        ->start();
}

}  // namespace zkr::detail
