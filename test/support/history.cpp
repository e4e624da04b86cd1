#include "history.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace zkr::test {

namespace {

[[noreturn]] void bad_line(int worker, const std::string& line) {
    throw std::runtime_error("worker " + std::to_string(worker) + ": cannot read history line '" + line + "'");
}

std::string describe(const hold_record& h) {
    return "worker " + std::to_string(h.worker) + " token " + std::to_string(h.token);
}

}  // namespace

worker_history parse_history(int worker, const std::vector<std::string>& lines) {
    worker_history w;
    w.worker = worker;
    hold_record* current = nullptr;  // the hold the following lines belong to
    for (const auto& line : lines) {
        std::istringstream in(line);
        std::string kind;
        in >> kind;
        if (kind == "session") {
            worker_history::session s;
            in >> s.at >> s.id >> s.password;
            if (!in) bad_line(worker, line);
            w.sessions.push_back(s);
        } else if (kind == "grant") {
            hold_record h;
            h.worker = worker;
            in >> h.requested >> h.granted >> h.token >> h.qty;
            if (!in) bad_line(worker, line);
            w.holds.push_back(h);
            current = &w.holds.back();
        } else if (kind == "nogrant") {
            mono_ns a = 0, b = 0;
            std::string outcome;
            in >> a >> b >> outcome;
            if (!in || (outcome != "fail" && outcome != "unknown")) bad_line(worker, line);
            ++(outcome == "fail" ? w.failed_acquires : w.unknown_acquires);
            current = nullptr;
        } else if (kind == "read" || kind == "write" || kind == "confirm" || kind == "release") {
            mono_ns t = 0, t2 = 0;
            std::int64_t token = 0;
            std::string outcome;
            in >> t;
            if (kind == "confirm") in >> t2;
            in >> token >> outcome;
            if (!in || !current || current->token != token) bad_line(worker, line);
            if (kind == "read") {
                current->read_ok = outcome == "ok";
            } else if (kind == "write") {
                current->write_accepted = outcome == "accepted";
                current->written = t;
            } else if (kind == "confirm") {
                if (outcome == "ok") current->proven_until = t;
                else if (outcome == "unknown") ++w.unknown_confirms;
            } else {
                current->released_ok = outcome == "ok";
                current->released = t;
                in >> current->state_at_release;
                current = nullptr;
            }
        } else if (kind == "state") {
            // Heard on the callback thread: it may come after the hold's release line.
            mono_ns t = 0;
            std::int64_t token = 0;
            std::string state;
            in >> t >> token >> state;
            if (!in) bad_line(worker, line);
            for (auto it = w.holds.rbegin(); it != w.holds.rend(); ++it)
                if (it->token == token) {
                    it->states.emplace_back(t, state);
                    break;
                }
        } else if (!kind.empty()) {
            bad_line(worker, line);
        }
    }
    return w;
}

check_result check_histories(const std::vector<worker_history>& workers, const check_options& options) {
    check_result r;
    std::vector<const hold_record*> proven;
    std::map<std::int64_t, int> tokens;  // token: the worker granted it
    long workers_accepted = 0;
    for (const auto& w : workers) {
        r.unknown_outcomes += w.unknown_acquires + w.unknown_confirms;
        for (const auto& h : w.holds) {
            ++r.holds;
            const auto [first, fresh] = tokens.emplace(h.token, w.worker);
            if (!fresh && first->second == w.worker) ++r.repeated_tokens;
            if (!fresh && !(options.cached_holds && first->second == w.worker))
                r.violations.push_back("token " + std::to_string(h.token) + " granted twice");
            if (h.write_accepted) ++(*h.write_accepted ? r.writes_accepted : r.writes_refused);
            if (h.write_accepted.value_or(false)) ++workers_accepted;
            if (h.state_at_release == "lost") ++r.holds_lost;
            if (!h.proven_until) continue;
            proven.push_back(&h);
            if (h.read_ok == false || h.write_accepted == false)
                r.violations.push_back(describe(h) + ": the store refused a holder proven valid (a newer token acted while it held)");
        }
    }
    r.proven_holds = static_cast<int>(proven.size());

    // At most max_holders at once: sweep the proven intervals (an end before a start at one instant).
    std::vector<std::pair<mono_ns, int>> edges;
    for (const auto* h : proven) {
        edges.emplace_back(h->granted, h->qty);
        edges.emplace_back(*h->proven_until, -h->qty);
    }
    std::sort(edges.begin(), edges.end());
    int held = 0;
    for (const auto& [t, delta] : edges) {
        held += delta;
        r.max_concurrent = std::max(r.max_concurrent, held);
        if (held > options.max_holders) {
            r.violations.push_back(std::to_string(held) + " proven holders at t=" + std::to_string(t) + " ns (max " +
                                   std::to_string(options.max_holders) + ")");
        }
    }

    if (options.mutex_like) {
        std::sort(proven.begin(), proven.end(), [](auto* a, auto* b) { return a->granted < b->granted; });
        for (std::size_t i = 1; i < proven.size(); ++i)
            if (proven[i]->token < proven[i - 1]->token ||
                (proven[i]->token == proven[i - 1]->token && !(options.cached_holds && proven[i]->worker == proven[i - 1]->worker)))
                r.violations.push_back(describe(*proven[i]) + " was granted after " + describe(*proven[i - 1]) +
                                       ": tokens must rise in grant order");
        if (options.store_value && options.store_count && *options.store_value != *options.store_count)
            r.violations.push_back("lost update: the store's value is " + std::to_string(*options.store_value) +
                                   " after " + std::to_string(*options.store_count) + " accepted writes");
        if (options.store_count && *options.store_count != workers_accepted)
            r.violations.push_back("the store accepted " + std::to_string(*options.store_count) +
                                   " writes, the workers recorded " + std::to_string(workers_accepted));
    }
    return r;
}

std::map<int, std::optional<mono_ns>> first_grant_after(const std::vector<worker_history>& workers, mono_ns t) {
    std::map<int, std::optional<mono_ns>> out;
    for (const auto& w : workers) {
        auto& first = out[w.worker];
        for (const auto& h : w.holds)
            if (h.requested >= t && (!first || h.granted < *first)) first = h.granted;
    }
    return out;
}

}  // namespace zkr::test
