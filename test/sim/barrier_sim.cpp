#include "barrier_sim.hpp"

#include "../../recipes/barriers/barrier_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include <optional>
#include <random>
#include <sstream>

namespace zkr::sim::barriers {

namespace {

using detail::barrier_machine;
namespace zk = detail::zk;
namespace barrier_in = detail::barrier_in;
namespace barrier_out = detail::barrier_out;

const std::string barrier = "/b";

// One wait of a client: its machine on the engine (once begun) and what the world saw of it.
struct wait_of {
    std::optional<sim_engine<barrier_machine>> engine;
    bool begun = false, passed = false;
    bool absent_since_begun = false;  // the barrier was absent at some moment since it began
};

struct client {
    int id = 0;
    std::vector<wait_of> waits;
};

class world {
public:
    world(const schedule& s, bool traced) : rng_(s.seed ^ 0x5bd1e995u), net_(zk_, rng_, out_) {
        out_.traced = traced;
        out_.kept_steps = 300;
        if (pick(2)) set();  // (else the first waits pass at once)
        faults_left_ = s.faults;
        operator_left_ = s.operator_steps;
        for (int i = 0; i < s.clients; ++i) {
            net_.open();
            client c;
            c.id = i;
            c.waits.resize(static_cast<std::size_t>(s.waits));
            clients_.push_back(std::move(c));
        }
        to_begin_ = s.clients * s.waits;
    }

    outcome run() {
        run_until_quiet(out_, 200000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.clients = net_.reach;
        return std::move(out_);
    }

private:
    bool step() {
        if (faults_left_ == 0) net_.heal();
        // (what, client): 0 apply, 1 deliver.
        std::vector<std::pair<int, int>> choices;
        for (auto& c : clients_) {
            const auto& conn = net_[c.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, c.id});
            if (!conn.inbound.empty()) choices.push_back({1, c.id});
        }
        if (to_begin_ > 0 && (choices.empty() || pick(100) < 10)) return begin_wait(), true;
        if (operator_left_ > 0 && (choices.empty() || pick(100) < 10)) return operator_step(), true;
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 8)) return fault(), true;
        if (choices.empty()) return false;  // quiescence
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        if (what == 0) {
            const auto a = net_.apply(net_[c.id]);
            ++out_.checks;
            out_.note("c" + std::to_string(c.id) + " applied #" + std::to_string(a.reply.id) + " of w" + std::to_string(a.who) +
                      (a.reply.ec ? " " + a.reply.ec.message() : a.reply.stat ? " (set)" : " (absent)"));
        } else {
            auto [who, e] = net_.deliver(net_[c.id]);
            if (std::holds_alternative<zk::connection_changed>(e)) {
                for (auto& w : c.waits)
                    if (w.begun) w.engine->link().deliver(e);
            } else {
                deliver_asked(c.waits[static_cast<std::size_t>(who)].engine->link(), std::move(e), out_, "c" + std::to_string(c.id) + " w" + std::to_string(who));
            }
        }
        return true;
    }

    // What the wait's machine decided, other than a request (its engine sent those).
    void on_outcome(client& c, std::size_t k, const barrier_machine::action& a) {
        auto& w = c.waits[k];
        if (std::holds_alternative<barrier_out::passed>(a)) {
            out_.note("c" + std::to_string(c.id) + " w" + std::to_string(k) + " passed");
            if (!w.absent_since_begun) out_.violate("c" + std::to_string(c.id) + " w" + std::to_string(k) + " passed, but the barrier was set all the time since it began");
            w.passed = true;
            ++out_.passed;
            // The wait is over: its engine stops, as the recipe stops it.
            w.engine->stop();
            w.engine->check_let_go(out_, "c" + std::to_string(c.id) + " w" + std::to_string(k));
        } else if (const auto* f = std::get_if<barrier_out::failed>(&a)) {
            out_.violate("c" + std::to_string(c.id) + " w" + std::to_string(k) + " failed: " + f->ec.message());
        }
    }

    void begin_wait() {
        --to_begin_;
        std::vector<std::pair<std::size_t, std::size_t>> idle;
        for (std::size_t i = 0; i < clients_.size(); ++i)
            for (std::size_t k = 0; k < clients_[i].waits.size(); ++k)
                if (!clients_[i].waits[k].begun) idle.push_back({i, k});
        const auto [i, k] = idle[pick(idle.size())];
        auto& w = clients_[i].waits[k];
        w.begun = true;
        w.absent_since_begun = !zk_.find(barrier);
        out_.note("c" + std::to_string(i) + " w" + std::to_string(k) + " begins (the barrier is " + (w.absent_since_begun ? "absent)" : "set)"));
        w.engine.emplace(net_, static_cast<int>(i), k, barrier_machine(barrier),
                         [this, i, k](const barrier_machine::action& a) { on_outcome(clients_[i], k, a); });
        w.engine->start(barrier_in::start{});
    }

    void set() {
        zk_.create_persistent("/", "b", "");
        net_.route_fired();
    }

    // Every wait begun sees that the barrier is absent now.
    void removed() {
        for (auto& c : clients_)
            for (auto& w : c.waits)
                if (w.begun) w.absent_since_begun = true;
    }

    // The operator sets or removes the barrier, or writes to it; the last step leaves it absent
    // or set at random.
    void operator_step() {
        --operator_left_;
        const bool is_set = zk_.find(barrier) != nullptr;
        if (is_set && pick(4) == 0) {
            out_.note("operator writes to the barrier");
            zk_.set_data(barrier, "x");
            net_.route_fired();
        } else if (is_set) {
            out_.note("operator removes the barrier");
            zk_.remove(barrier);
            removed();
            net_.route_fired();
        } else {
            out_.note("operator sets the barrier");
            set();
        }
    }

    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(clients_.size()))];
        switch (pick(4)) {
            case 0: return net_.drop_or_reconnect(conn);
            case 1: return net_.expire(conn);
            case 2:
                if (net_.lose_reply(conn)) ++out_.lost_replies;
                return;
            default:  // (a partition that outlasts the session)
                if (!net_.lose_reply(conn)) return;
                ++out_.lost_replies;
                return net_.expire(conn);
        }
    }

    void check_quiescent() {
        if (zk_.find(barrier)) return;
        for (const auto& c : clients_)
            for (std::size_t k = 0; k < c.waits.size(); ++k)
                if (c.waits[k].begun && !c.waits[k].passed)
                    return out_.violate("c" + std::to_string(c.id) + " w" + std::to_string(k) + " still waits, though the barrier is absent and all is quiet");
    }

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<barrier_machine::input> net_;
    std::vector<client> clients_;
    int faults_left_ = 0, operator_left_ = 0, to_begin_ = 0;
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.clients = 1 + static_cast<int>(rng() % 3);
    s.waits = 1 + static_cast<int>(rng() % 3);
    s.faults = static_cast<int>(rng() % 12);
    s.operator_steps = static_cast<int>(rng() % 8);
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.clients << " clients, " << s.waits << " waits each, " << s.faults << " faults, " << s.operator_steps
      << " operator steps";
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::barriers
