#include "count_sim.hpp"

#include "../../recipes/shared/value_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include "../../src/parse_number.hpp"

#include <deque>
#include <map>
#include <optional>
#include <random>
#include <sstream>

namespace zkr::sim::count {

namespace {

using detail::count_machine;
using zkr::errc;
namespace zk = detail::zk;

const std::string count_path = "/counts/c";
constexpr std::uint64_t view = 0, worker = 1;  // who an op or event is for (connection changes: the view)

// What each client runs beside its connection (sim_clients.hpp).
struct client {
    int id = 0;
    std::optional<sim_engine<count_machine>> engine;  // the view's machine
    int done = 0;          // the worker's increments that took
    bool cas_out = false;  // the worker's compare-and-set is in flight (or its read after a conflict)
    bool cas_reading = false;  // the worker reads after a conflict, as try_set_count does
    std::string cas_data;      // what the compare-and-set writes
    // What the worker saw, on its way to the view: the real object hands it over from the caller's
    // thread after the reply, while the network thread may have applied newer reads meanwhile.
    std::optional<detail::value_in::observed> to_show;
    zk::ticket next_ticket = 1u << 30;  // the worker's own tickets (apart from the machine's)
    std::map<std::int64_t, std::int32_t> last_version;  // by czxid: the newest version applied
};

class world {
public:
    world(const schedule& s, bool traced) : s_(s), rng_(s.seed ^ 0x5bd1e995u), net_(zk_, rng_, out_) {
        out_.traced = traced;
        out_.kept_steps = 300;
        zk_.create_persistent("/counts", "c", "0");
        faults_left_ = s.faults;
        for (int i = 0; i < s.clients; ++i) {
            net_.open();
            client c;
            c.id = i;
            clients_.push_back(std::move(c));
        }
        for (std::size_t i = 0; i < clients_.size(); ++i) {
            auto& c = clients_[i];
            c.engine.emplace(net_, c.id, view, count_machine(count_path), [this, i](const count_machine::action& a) { on_outcome(clients_[i], a); });
            c.engine->start(detail::value_in::start{});
        }
    }

    outcome run() {
        run_until_quiet(out_, 200000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.clients = net_.reach;
        return std::move(out_);
    }

private:
    bool step() {
        // The faults are over: every connection comes back, and a deleted node is made again.
        if (faults_left_ == 0) heal();
        std::vector<std::pair<int, int>> choices;  // (what, client): 0 apply, 1 deliver, 2 worker, 3 the worker shows what it saw
        for (auto& c : clients_) {
            const auto& conn = net_[c.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, c.id});
            if (!conn.inbound.empty()) choices.push_back({1, c.id});
            if (conn.connected && !c.cas_out && !c.to_show && c.done < s_.increments && c.engine->machine().value()) choices.push_back({2, c.id});
            if (c.to_show) choices.push_back({3, c.id});
        }
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 6)) return fault(), true;
        if (choices.empty()) return false;  // (healed above: quiescence)
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        if (what == 0) apply(c);
        else if (what == 1) deliver(c);
        else if (what == 2) start_cas(c);
        else c.engine->post(*std::exchange(c.to_show, std::nullopt));
        return true;
    }

    // The server applies the client's next request.
    void apply(client& c) {
        const auto a = net_.apply(net_[c.id]);
        out_.note("c" + std::to_string(c.id) + " applied " + std::string(a.who == worker ? "cas" : "read") + " #" + std::to_string(a.reply.id) +
                  (a.reply.ec ? " " + a.reply.ec.message() : ""));
        if (a.who == worker && std::holds_alternative<zk::set_data>(a.op) && !a.reply.ec) ++out_.took;
    }

    void deliver(client& c) {
        auto [who, e] = net_.deliver(net_[c.id]);
        if (who == worker) return cas_answered(c, std::get<zk::reply>(e));
        deliver_asked(c.engine->link(), std::move(e), out_, "c" + std::to_string(c.id));
    }

    // What the view's machine decided, other than a request (its engine sent those).
    void on_outcome(client& c, const count_machine::action& a) {
        if (const auto* r = std::get_if<count_machine::value_read>(&a)) {
            ++out_.reads;
            // A late reply never puts an older version of the same node back.
            if (const auto it = c.last_version.find(r->czxid); it != c.last_version.end() && r->version < it->second)
                out_.violate("c" + std::to_string(c.id) + " applied version " + std::to_string(r->version) + " after " + std::to_string(it->second));
            auto& last = c.last_version[r->czxid];
            last = std::max(last, r->version);
            // The view agrees with the machine's own reads.
            const auto& m = c.engine->machine();
            if (m.value() != r->value || m.version() != r->version) out_.violate("c" + std::to_string(c.id) + " says a value it does not keep");
        }
    }

    // The worker: compare-and-set from what the view shows, as try_set_count.
    void start_cas(client& c) {
        const auto& m = c.engine->machine();
        c.cas_out = true;
        c.cas_data = std::to_string(*m.value() + 1);
        net_[c.id].outbound.push_back({worker, zk::set_data{++c.next_ticket, count_path, c.cas_data, m.version()}});
    }

    // As try_set_count: a write that took is shown (value_in::observed, at a step of its own); a
    // conflict reads the node, and shows what it read, before the worker tries again.
    void cas_answered(client& c, const zk::reply& r) {
        if (std::exchange(c.cas_reading, false)) {
            c.cas_out = false;
            if (!r.ec && r.stat) c.to_show = detail::value_in::observed{r.data, *r.stat};
            return;
        }
        if (!r.ec) {
            c.cas_out = false;
            ++c.done;
            ++out_.successes;
            c.to_show = detail::value_in::observed{c.cas_data, *r.stat};
            return;
        }
        ++out_.conflicts;  // bad_version, no_node, connection_loss: try again
        if (r.ec != errc::bad_version) {
            c.cas_out = false;
            return;
        }
        c.cas_reading = true;
        net_[c.id].outbound.push_back({worker, zk::get_data{++c.next_ticket, count_path, false}});
    }

    // ---- faults ----------------------------------------------------------------------------
    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(clients_.size()))];
        switch (pick(5)) {
            case 0: return net_.drop_or_reconnect(conn);
            case 1: return net_.reconnect(conn);
            case 2: return net_.expire(conn);
            case 3: {  // an operator writes: the same value again (a new version, no new value), or
                       // something that is not a number, put right by a later write
                const node* n = zk_.find(count_path);
                if (!n) return;
                if (garbled_value_) {
                    put_right();
                } else if (pick(3) == 0) {
                    out_.note("operator writes a word into the count");
                    garbled_value_ = n->data;
                    zk_.set_data(count_path, "many");
                } else {
                    out_.note("operator rewrites the count");
                    zk_.set_data(count_path, n->data);
                }
                net_.route_fired();
                return;
            }
            default:  // an operator deletes the node, or makes it again with the value it had
                if (!s_.deletions) return;
                if (const node* n = zk_.find(count_path)) {
                    out_.note("operator deletes the count");
                    deleted_value_ = n->data;
                    zk_.remove(count_path);
                } else {
                    recreate();
                }
                net_.route_fired();
                return;
        }
    }

    // The operator writes back the number the count had before its word.
    void put_right() {
        out_.note("operator puts the count right");
        zk_.set_data(count_path, *std::exchange(garbled_value_, std::nullopt));
    }

    void recreate() {
        if (zk_.find(count_path) || !deleted_value_) return;
        out_.note("operator makes the count again");
        zk_.create_persistent("/counts", "c", *std::exchange(deleted_value_, std::nullopt));
    }

    // No faults left: every client connected and the node there and a number.
    void heal() {
        net_.heal();
        if (garbled_value_ && zk_.find(count_path)) {
            put_right();
            net_.route_fired();
        }
        if (deleted_value_) {
            recreate();
            net_.route_fired();
        }
    }

    // ---- the checker at quiescence ------------------------------------------------------------
    void check_quiescent() {
        const node* n = zk_.find(count_path);
        if (!n) return out_.violate("the count's node is missing at quiescence");
        for (const auto& c : clients_) {
            if (c.done < s_.increments) return out_.violate("c" + std::to_string(c.id) + "'s worker never finished");
            const auto& m = c.engine->machine();
            if (m.value() != detail::parse_number<std::int32_t>(n->data) || m.version() != n->version)
                return out_.violate("c" + std::to_string(c.id) + " shows " + (m.value() ? std::to_string(*m.value()) : "nothing") + " at version " +
                               std::to_string(m.version()) + ", the server " + n->data + " at version " + std::to_string(n->version));
        }
        // Every increment the server applied is in the value, those whose worker heard success and
        // those whose reply was lost with the connection (a deleted and re-made node: see
        // count_sim.hpp).
        if (out_.successes > out_.took)
            out_.violate(std::to_string(out_.successes) + " increments said to succeed, " + std::to_string(out_.took) + " applied");
        if (!s_.deletions && n->data != std::to_string(out_.took))
            out_.violate("lost increments: the count reads " + n->data + " after " + std::to_string(out_.took) + " that took");
    }

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    const schedule& s_;
    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<count_machine::input> net_;
    std::vector<client> clients_;
    int faults_left_ = 0;
    std::optional<std::string> deleted_value_;
    std::optional<std::string> garbled_value_;  // the number the count had before an operator's word
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.clients = 1 + static_cast<int>(rng() % 4);
    s.increments = 1 + static_cast<int>(rng() % 6);
    s.faults = static_cast<int>(rng() % 12);
    s.deletions = rng() % 4 == 0;
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.clients << " clients, " << s.increments << " increments each, " << s.faults << " faults"
      << (s.deletions ? ", deletions" : "");
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::count
