// Metrics for Prometheus from a zkr::observer: counters and latency histograms of operations,
// connection states and holds, written in Prometheus' text exposition format (serve text() on
// /metrics with the HTTP server you already have).
// Usage: prometheus_example HOST:PORT
#include <zkr/zkr.hpp>

#include <array>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

// A Prometheus histogram: cumulative buckets of seconds, a sum and a count.
class histogram {
public:
    static constexpr std::array<double, 12> bounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30};

    void observe(std::chrono::nanoseconds d) {
        const double seconds = std::chrono::duration<double>(d).count();
        for (std::size_t i = 0; i < bounds.size(); ++i)
            if (seconds <= bounds[i]) ++buckets_[i];
        sum_ += seconds;
        ++count_;
    }
    void write(std::ostream& out, const std::string& name, const std::string& labels) const {
        const std::string sep = labels.empty() ? "" : ",";
        for (std::size_t i = 0; i < bounds.size(); ++i)
            out << name << "_bucket{" << labels << sep << "le=\"" << bounds[i] << "\"} " << buckets_[i] << '\n';
        out << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << count_ << '\n';
        const std::string braces = labels.empty() ? "" : "{" + labels + "}";
        out << name << "_sum" << braces << ' ' << sum_ << '\n' << name << "_count" << braces << ' ' << count_ << '\n';
    }

private:
    std::array<std::uint64_t, bounds.size()> buckets_{};
    double sum_ = 0;
    std::uint64_t count_ = 0;
};

// Every observer call comes on the client's callback thread; text() may be called from any thread.
class prometheus_observer final : public zkr::observer {
public:
    void on_operation(const zkr::operation_event& e) override {
        std::lock_guard lock(m_);
        const std::string kind(zkr::to_string(e.kind));
        // A recipe's expected answer (a node ahead that had already gone) is no failure: an alert
        // on result!="ok" must not fire on a busy lock's normal traffic.
        ++operations_[label("kind", kind) + "," + label("result", e.result && !e.expected ? e.result.message() : "ok")];
        operation_seconds_[label("kind", kind)].observe(e.latency);
        retries_ += static_cast<std::uint64_t>(e.retries);
    }
    void on_session(const zkr::session_event& e) override {
        std::lock_guard lock(m_);
        ++sessions_[label("state", std::string(zkr::to_string(e.state)))];
    }
    void on_hold(const zkr::hold_event& e) override {
        std::lock_guard lock(m_);
        ++holds_[label("event", std::string(zkr::to_string(e.kind)))];
        if (e.kind == zkr::hold_event_kind::acquired) wait_seconds_.observe(e.duration);
        if (e.kind == zkr::hold_event_kind::released) hold_seconds_.observe(e.duration);
        if (e.kind == zkr::hold_event_kind::lost) ++lost_[label("cause", std::string(zkr::to_string(e.cause)))];
        // Gauges: the holds this process has now, by recipe (a hold begins with acquired and ends
        // with lost or released, exactly once each).
        const auto recipe = label("recipe", std::string(e.recipe));
        if (e.kind == zkr::hold_event_kind::acquired) ++holding_[recipe];
        if (e.kind == zkr::hold_event_kind::lost || e.kind == zkr::hold_event_kind::released) --holding_[recipe];
    }
    void on_leadership(const zkr::leadership_event& e) override {
        std::lock_guard lock(m_);
        ++leadership_[label("gained", e.gained ? "true" : "false")];
        leading_[label("path", e.path)] = e.gained ? 1 : 0;  // am I the leader of this election now
    }

    std::string text() const {
        std::lock_guard lock(m_);
        std::ostringstream out;
        counters(out, "zkr_operations_total", "ZooKeeper operations by kind and result.", operations_);
        out << "# HELP zkr_operation_retries_total Operations sent again after a retryable failure.\n"
            << "# TYPE zkr_operation_retries_total counter\nzkr_operation_retries_total " << retries_ << '\n';
        out << "# HELP zkr_operation_duration_seconds Latency of ZooKeeper operations, retries included.\n"
            << "# TYPE zkr_operation_duration_seconds histogram\n";
        for (const auto& [labels, h] : operation_seconds_) h.write(out, "zkr_operation_duration_seconds", labels);
        counters(out, "zkr_session_events_total", "Connection state changes.", sessions_);
        counters(out, "zkr_hold_events_total", "Steps of acquires and holds.", holds_);
        counters(out, "zkr_holds_lost_total", "Holds lost, by cause.", lost_);
        counters(out, "zkr_leadership_changes_total", "Terms of leadership gained and ended.", leadership_);
        gauges(out, "zkr_holds", "Holds this process has now, by recipe.", holding_);
        gauges(out, "zkr_leading", "1 while this process leads the election at path.", leading_);
        out << "# HELP zkr_lock_wait_seconds Time from an acquire's start to its grant.\n# TYPE zkr_lock_wait_seconds histogram\n";
        wait_seconds_.write(out, "zkr_lock_wait_seconds", "");
        out << "# HELP zkr_lock_hold_seconds Time from a grant to its release.\n# TYPE zkr_lock_hold_seconds histogram\n";
        hold_seconds_.write(out, "zkr_lock_hold_seconds", "");
        return out.str();
    }

    std::uint64_t holds_released() const {
        std::lock_guard lock(m_);
        const auto it = holds_.find(label("event", "released"));
        return it == holds_.end() ? 0 : it->second;
    }

private:
    static std::string label(const std::string& name, const std::string& value) { return name + "=\"" + value + "\""; }
    static void counters(std::ostream& out, const std::string& name, const std::string& help,
                         const std::map<std::string, std::uint64_t>& values) {
        out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n";
        for (const auto& [labels, n] : values) out << name << '{' << labels << "} " << n << '\n';
    }

    static void gauges(std::ostream& out, const std::string& name, const std::string& help,
                       const std::map<std::string, std::int64_t>& values) {
        out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n";
        for (const auto& [labels, n] : values) out << name << '{' << labels << "} " << n << '\n';
    }

    mutable std::mutex m_;
    std::map<std::string, std::uint64_t> operations_, sessions_, holds_, lost_, leadership_;
    std::map<std::string, std::int64_t> holding_, leading_;
    std::map<std::string, histogram> operation_seconds_;
    std::uint64_t retries_ = 0;
    histogram wait_seconds_, hold_seconds_;
};

}  // namespace

int main(int argc, char** argv) {
    const auto metrics = std::make_shared<prometheus_observer>();
    zkr::client_options options;
    options.connect_string = argc > 1 ? argv[1] : "127.0.0.1:2181";
    options.observer = metrics;
    zkr::client client(options);
    client.start();
    if (!client.block_until_connected(std::chrono::seconds(10))) return 1;

    zkr::interprocess_mutex lock(client, "/jobs/metrics-example");
    constexpr int cycles = 5;
    for (int i = 0; i < cycles; ++i) {
        std::scoped_lock guard(lock);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the work
    }
    // Events arrive on the callback thread, just after the calls that made them.
    for (int i = 0; i < 100 && metrics->holds_released() < cycles; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto text = metrics->text();
    std::cout << text;
    // Every hold was released: the gauge of holds now reads 0 for the mutex.
    const bool none_held = text.find("zkr_holds{recipe=\"mutex\"} 0\n") != std::string::npos;
    return metrics->holds_released() == cycles && none_held ? 0 : 1;
}
