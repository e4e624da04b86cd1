// Two models of a blocking call through a ZooKeeper C handle that a network thread owns, built on
// the bare C client (no zkr) to measure what issue 24's remaining lever could win:
//
// - hop_model: today's shape of zkr's sync call. The caller queues the request and wakes the
//   network thread (an eventfd, unless that thread is still polling for it); the network thread
//   sends it, reads the reply and hands it back (the caller spins, yielding, then sleeps on a
//   condition variable). After answering a spinning caller the network thread polls for its next
//   request for 50 us, as zkr's does.
// - shared_epoll_model: the baton. Both threads wait in epoll_wait on one epoll instance, which
//   wakes one waiter per event, the one that began to wait last; whoever wakes processes under a
//   mutex (the baton). A caller sends its request on its own thread and waits in epoll_wait itself,
//   so its reply wakes it and nobody else; the network thread, asleep in epoll_wait all along,
//   still serves every event that comes while no caller waits (watches, pings, a dropped
//   connection). If the network thread gets an event while a caller waits, it passes the event on
//   (re-arms the socket, which wakes the waiting caller) rather than answering for it.
//
// Both take a connected handle and return from call() once the request's completion ran.
#pragma once

#include <zookeeper/zookeeper.h>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace lockbench {

/// One blocking call's completion, set by the C client's callback on whichever thread runs it.
class call_state {
public:
    static void on_data(int rc, const char*, int, const Stat*, const void* d) { self(d).finish(rc); }
    static void on_string(int rc, const char*, const void* d) { self(d).finish(rc); }
    static void on_void(int rc, const void* d) { self(d).finish(rc); }

    bool done() const noexcept { return done_.load(std::memory_order_acquire); }
    /// Set on the thread that finished a call whose caller was still spinning for it.
    static inline thread_local bool answered_spinning = false;

    /// Spins (yielding its core) for up to `spin`, then sleeps until finish().
    void wait(std::chrono::microseconds spin) {
        spinning_.store(true, std::memory_order_relaxed);
        for (const auto until = std::chrono::steady_clock::now() + spin; !done() && std::chrono::steady_clock::now() < until;)
            std::this_thread::yield();
        spinning_.store(false, std::memory_order_relaxed);
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return done(); });
        check();
    }
    void check() const {
        if (rc_ != ZOK) throw std::runtime_error(std::string("threaded raw call failed: ") + zerror(rc_));
    }

private:
    static call_state& self(const void* d) { return *static_cast<call_state*>(const_cast<void*>(d)); }
    void finish(int rc) {
        rc_ = rc;
        if (spinning_.load(std::memory_order_relaxed)) answered_spinning = true;
        // Notified under the lock: the caller may return as soon as it sees done_, and it takes
        // this lock before it does, so the state outlives the notify.
        std::lock_guard lock(m_);
        done_.store(true, std::memory_order_release);
        cv_.notify_one();
    }
    int rc_ = ZOK;
    std::atomic<bool> done_{false};
    std::atomic<bool> spinning_{false};
    std::mutex m_;
    std::condition_variable cv_;
};

/// Sends `state`'s request through `zh` (a zoo_a* call with one of call_state's completions).
using issue_function = std::function<void(zhandle_t* zh, call_state* state)>;

inline int poll_timeout_ms(const timeval& tv) {
    return static_cast<int>(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

/// The C client's interest (ZOOKEEPER_READ/WRITE) as poll(2) events, and back.
inline short poll_events_of(int interest) {
    return static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
}
inline int zk_events_of(short revents) {
    return ((revents & POLLIN) ? ZOOKEEPER_READ : 0) | ((revents & POLLOUT) ? ZOOKEEPER_WRITE : 0);
}

inline bool readable_now(int fd) {
    pollfd p{fd, POLLIN, 0};
    return fd >= 0 && ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/// The C client reads one buffer per call: process while the socket stays readable.
inline void process_events(zhandle_t* zh, int fd, int events) {
    for (int i = 0; i < 256; ++i) {
        if (zookeeper_process(zh, events) != ZOK || !(events & ZOOKEEPER_READ) || !readable_now(fd)) return;
    }
}

/// Sends what the C client has queued now rather than after another trip through poll.
inline void flush(zhandle_t* zh) {
    int fd = -1, interest = 0;
    timeval tv{};
    zookeeper_interest(zh, &fd, &interest, &tv);
    if (fd >= 0 && (interest & ZOOKEEPER_WRITE)) zookeeper_process(zh, ZOOKEEPER_WRITE);
}

class hop_model {
public:
    hop_model(zhandle_t* zh, std::chrono::microseconds spin) : zh_(zh), spin_(spin) {
        if (wake_ < 0) throw std::runtime_error("eventfd failed");
        thread_ = std::thread([this] { loop(); });
    }
    ~hop_model() {
        {
            std::lock_guard lock(m_);
            stop_ = true;
        }
        wake();
        thread_.join();
        ::close(wake_);
    }
    hop_model(const hop_model&) = delete;
    hop_model& operator=(const hop_model&) = delete;

    void call(const issue_function& issue) {
        call_state state;
        {
            std::lock_guard lock(m_);
            queue_.push_back([&] { issue(zh_, &state); });
        }
        if (in_poll_.load()) wake();  // seq_cst with the network thread's store: no lost wake-up
        state.wait(spin_);
    }

private:
    static constexpr std::chrono::microseconds follow_up_window{50};

    void wake() {
        const std::uint64_t one = 1;
        (void)!::write(wake_, &one, sizeof one);
    }
    // Runs the queued requests; true if there were any.
    bool run_queue() {
        std::deque<std::function<void()>> q;
        {
            std::lock_guard lock(m_);
            q.swap(queue_);
        }
        for (auto& f : q) f();
        if (!q.empty()) flush(zh_);
        return !q.empty();
    }
    bool stopping() {
        std::lock_guard lock(m_);
        return stop_;
    }
    void loop() {
        while (!stopping()) {
            run_queue();
            int fd = -1, interest = 0;
            timeval tv{};
            zookeeper_interest(zh_, &fd, &interest, &tv);
            pollfd p[2] = {{fd, poll_events_of(interest), 0}, {wake_, POLLIN, 0}};
            in_poll_.store(true);
            bool queued = false;
            {
                std::lock_guard lock(m_);
                queued = !queue_.empty() || stop_;
            }
            if (!queued) ::poll(p, 2, poll_timeout_ms(tv));
            in_poll_.store(false);
            if (p[1].revents & POLLIN) {
                std::uint64_t v = 0;
                (void)!::read(wake_, &v, sizeof v);
            }
            call_state::answered_spinning = false;
            process_events(zh_, fd, zk_events_of(p[0].revents));
            if (call_state::answered_spinning) follow_up();
        }
    }
    // After answering a caller that was spinning: poll for its next request briefly, as zkr does.
    void follow_up() {
        for (const auto until = std::chrono::steady_clock::now() + follow_up_window; std::chrono::steady_clock::now() < until;) {
            if (run_queue()) return;
            std::this_thread::yield();
        }
    }

    zhandle_t* zh_;
    std::chrono::microseconds spin_;
    int wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    std::mutex m_;
    std::deque<std::function<void()>> queue_;
    bool stop_ = false;
    std::atomic<bool> in_poll_{false};
    std::thread thread_;
};

class shared_epoll_model {
public:
    explicit shared_epoll_model(zhandle_t* zh) : zh_(zh) {
        if (epoll_ < 0 || stop_fd_ < 0) throw std::runtime_error("epoll or eventfd failed");
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = stop_fd_;
        ::epoll_ctl(epoll_, EPOLL_CTL_ADD, stop_fd_, &ev);
        thread_ = std::thread([this] { loop(); });
    }
    ~shared_epoll_model() {
        const std::uint64_t one = 1;
        (void)!::write(stop_fd_, &one, sizeof one);
        thread_.join();
        ::close(epoll_);
        ::close(stop_fd_);
    }
    shared_epoll_model(const shared_epoll_model&) = delete;
    shared_epoll_model& operator=(const shared_epoll_model&) = delete;

    void call(const issue_function& issue) {
        call_state state;
        int timeout = 0;
        {
            std::lock_guard baton(baton_);
            issue(zh_, &state);
            flush(zh_);
            ++callers_waiting_;
            timeout = arm();
        }
        while (!state.done()) {
            epoll_event ev[2];
            const int n = ::epoll_wait(epoll_, ev, 2, timeout);
            std::lock_guard baton(baton_);
            for (int i = 0; i < n; ++i)
                if (ev[i].data.fd != stop_fd_) process(ev[i].events);
            if (n == 0) process(0);  // the C client's own deadline (a ping)
            timeout = arm();
        }
        {
            std::lock_guard baton(baton_);
            if (--callers_waiting_ == 0 && parked_) callers_done_.notify_one();
        }
        state.check();
    }
    long passed_on() const noexcept { return passed_on_; }

private:
    // Baton held. Arms the socket for one event (EPOLLONESHOT: the thread that gets it re-arms)
    // and returns the C client's deadline in ms.
    int arm() {
        int fd = -1, interest = 0;
        timeval tv{};
        zookeeper_interest(zh_, &fd, &interest, &tv);
        if (fd >= 0) {
            epoll_event ev{};
            ev.events = EPOLLONESHOT | ((interest & ZOOKEEPER_READ) ? EPOLLIN : 0u) | ((interest & ZOOKEEPER_WRITE) ? EPOLLOUT : 0u);
            ev.data.fd = fd;
            if (::epoll_ctl(epoll_, fd == armed_fd_ ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0) armed_fd_ = fd;
            fd_ = fd;
        }
        return poll_timeout_ms(tv);
    }
    void process(std::uint32_t e) {
        int events = 0;
        if (e & (EPOLLIN | EPOLLERR | EPOLLHUP)) events |= ZOOKEEPER_READ;
        if (e & EPOLLOUT) events |= ZOOKEEPER_WRITE;
        process_events(zh_, fd_, events);
    }
    void loop() {
        int timeout = 0;
        {
            std::lock_guard baton(baton_);
            timeout = arm();
        }
        for (;;) {
            epoll_event ev[2];
            const int n = ::epoll_wait(epoll_, ev, 2, timeout);
            std::unique_lock baton(baton_);
            bool passed = false;
            for (int i = 0; i < n; ++i) {
                if (ev[i].data.fd == stop_fd_) return;
                if (callers_waiting_ > 0) passed = true;  // re-armed below: the waiting caller wakes
                else process(ev[i].events);
            }
            if (n == 0 && callers_waiting_ == 0) process(0);
            timeout = arm();
            if (passed) {
                // Out of the caller's way until it is done: back in epoll_wait now, this thread
                // could take the re-armed event again before the caller does.
                ++passed_on_;
                parked_ = true;
                callers_done_.wait(baton, [&] { return callers_waiting_ == 0; });
                parked_ = false;
                timeout = arm();
            }
        }
    }

    zhandle_t* zh_;
    int epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    int stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    std::mutex baton_;  // guards the handle, and what follows
    int armed_fd_ = -1;
    int fd_ = -1;
    int callers_waiting_ = 0;
    bool parked_ = false;  // the network thread waits for callers_waiting_ == 0
    std::condition_variable callers_done_;
    long passed_on_ = 0;
    std::thread thread_;
};

}  // namespace lockbench
