#include "double_barrier_sim.hpp"

#include "../../recipes/barriers/double_barrier_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include <algorithm>
#include <optional>
#include <random>
#include <sstream>

namespace zkr::sim::double_barriers {

namespace {

using detail::double_barrier_machine;
namespace zk = detail::zk;
namespace db_in = detail::double_barrier_in;
namespace db_out = detail::double_barrier_out;

const std::string barrier_path = "/db";

struct member {
    int id = 0;
    std::string name;
    std::size_t n = 0;  // the members the barrier waits for
    std::optional<sim_engine<double_barrier_machine>> engine;  // once it begins to enter
    enum class stage { idle, entering, entered, leaving, left, giving_up, gave_up, failed } at = stage::idle;
    bool lost_while_entering = false;
    bool give_up_on_its_way = false;  // posted from another thread, not yet run
    bool expired_since_entered = false;  // its node was gone with its session at some moment since it entered

    member(int i, std::size_t count) : id(i), name("m" + std::to_string(i)), n(count) {}
    bool in() const { return at == stage::entering || at == stage::entered || at == stage::leaving || at == stage::giving_up; }
};

class world {
public:
    world(const schedule& s, bool traced) : rng_(s.seed ^ 0x2545f491u), net_(zk_, rng_, out_), give_ups_(s.give_ups) {
        out_.traced = traced;
        out_.kept_steps = 400;
        faults_left_ = s.faults;
        for (int i = 0; i < s.members; ++i) {
            net_.open();
            members_.emplace_back(i, static_cast<std::size_t>(s.members));
        }
    }

    outcome run() {
        run_until_quiet(out_, 300000, [this] { return step(); });
        if (out_.ok) check_quiescent();
        out_.clients = net_.reach;
        return std::move(out_);
    }

private:
    bool step() {
        if (faults_left_ == 0) net_.heal();
        std::vector<std::pair<int, int>> choices;  // (0 apply | 1 deliver | 2 a give-up posted elsewhere runs, member)
        for (auto& m : members_) {
            const auto& conn = net_[m.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, m.id});
            if (!conn.inbound.empty()) choices.push_back({1, m.id});
            if (m.give_up_on_its_way) choices.push_back({2, m.id});
        }
        std::vector<int> can_act;  // members that may begin to enter or to leave, or give up
        for (auto& m : members_)
            if (m.at == member::stage::idle || m.at == member::stage::entered ||
                (give_ups_ && (m.at == member::stage::entering || m.at == member::stage::leaving)))
                can_act.push_back(m.id);
        if (!can_act.empty() && (choices.empty() || pick(100) < 8)) return act(members_[static_cast<std::size_t>(can_act[pick(can_act.size())])]), true;
        if (faults_left_ > 0 && (choices.empty() || pick(100) < 6)) return fault(), true;
        if (pick(100) < 2) {
            zk_.reap_containers();
            net_.route_fired();
        }
        if (choices.empty()) return false;  // quiescence
        const auto [what, id] = choices[pick(choices.size())];
        auto& m = members_[static_cast<std::size_t>(id)];
        if (what == 0) {
            const auto a = net_.apply(net_[m.id]);
            const auto* create = std::get_if<zk::create>(&a.op);
            out_.note(m.name + " applied #" + std::to_string(a.reply.id) + (a.reply.ec ? " " + a.reply.ec.message() : " ok") +
                      (create ? " (create " + create->path + ")" : ""));
            if (create && create->path == barrier_path + "/ready" && !a.reply.ec) check_ready_made(m);
        } else if (what == 2) {
            m.give_up_on_its_way = false;
            m.engine->post(db_in::give_up{});
        } else {
            auto [who, e] = net_.deliver(net_[m.id]);
            // (A member that has not begun has no engine, which would not observe the connection,
            // and has sent nothing.)
            if (m.engine) deliver_asked(m.engine->link(), std::move(e), out_, m.name);
            else if (!std::holds_alternative<zk::connection_changed>(e)) out_.violate(m.name + " got " + describe_delivery(e) + " before it began");
        }
        return true;
    }

    void act(member& m) {
        if (m.at == member::stage::idle) {
            out_.note(m.name + " begins to enter");
            m.at = member::stage::entering;
            std::size_t in = 0;
            for (const auto& x : members_) in += x.in() ? 1 : 0;
            most_in_ = std::max(most_in_, in);
            // Its engine hears of connection changes from now on only: it observes from its start.
            const auto i = static_cast<std::size_t>(m.id);
            m.engine.emplace(net_, m.id, 0, double_barrier_machine(barrier_path, m.name, m.n),
                             [this, i](const double_barrier_machine::action& a) { on_outcome(members_[i], a); });
            return m.engine->start(db_in::enter{});
        }
        if (m.at == member::stage::entered) check_node_kept(m);
        if (m.at == member::stage::entered && (!give_ups_ || pick(4) != 0)) {
            out_.note(m.name + " begins to leave");
            m.at = member::stage::leaving;
            return m.engine->post(db_in::leave{});
        }
        out_.note(m.name + " gives up");
        m.at = member::stage::giving_up;
        // A call's timeout, or the object's end, posts the give-up from its own thread: the
        // machine may decide more before it runs.
        if (pick(2) == 0) {
            m.give_up_on_its_way = true;
            return;
        }
        m.engine->post(db_in::give_up{});
    }

    // What m's machine decided, other than a request (its engine sent those).
    void on_outcome(member& m, const double_barrier_machine::action& a) {
        if (std::holds_alternative<db_out::entered>(a) && m.at == member::stage::giving_up) {
            // Its call gave up already: as the recipe (withdrawing), it gives up again from inside
            // this outcome, and its engine runs that after the event at hand.
            out_.note(m.name + " entered after its call gave up: gives up again");
            ++out_.entered_after_giving_up;
            return m.engine->post(db_in::give_up{});
        }
        if (std::holds_alternative<db_out::entered>(a)) {
            out_.note(m.name + " entered");
            ++out_.entered;
            m.at = member::stage::entered;
            // Its session was lost while it entered and its node is not made again yet: the
            // others may leave meanwhile (the known gap).
            m.expired_since_entered = m.lost_while_entering && !zk_.find(barrier_path + "/" + m.name);
            if (!zk_.find(barrier_path + "/ready") && !ready_seen_) out_.violate(m.name + " entered, but ready was never made");
        } else if (std::holds_alternative<db_out::left>(a)) {
            out_.note(m.name + " left");
            ++out_.left;
            check_left(m);
            m.at = member::stage::left;
            stop(m);
        } else if (std::holds_alternative<db_out::gave_up>(a)) {
            out_.note(m.name + " gave up");
            ++out_.gave_up;
            m.at = member::stage::gave_up;
            stop(m);
            if (zk_.find(barrier_path + "/" + m.name)) out_.violate(m.name + " gave up, but its node is still there");
        } else if (const auto* f = std::get_if<db_out::failed>(&a)) {
            // Only an enter whose session was lost may fail (the others may have gone
            // through without it); its node must be gone.
            if (f->ec != zkr::errc::session_expired || (m.at != member::stage::entering && m.at != member::stage::giving_up))
                out_.violate(m.name + " failed: " + f->ec.message());
            out_.note(m.name + " failed: " + f->ec.message());
            ++out_.failed;
            m.at = member::stage::failed;
            stop(m);
            if (zk_.find(barrier_path + "/" + m.name)) out_.violate(m.name + " failed, but its node is still there");
        }
    }

    // m's calls are over: its engine stops, as the recipe stops it.
    void stop(member& m) {
        m.engine->stop();
        m.engine->check_let_go(out_, m.name);
    }

    // `ready` was just made by m: at least N members must have been in at once before. (Not
    // necessarily now: one may have failed or given up since it was counted, as a process may
    // die after it arrived.)
    void check_ready_made(const member& m) {
        ready_seen_ = true;
        if (most_in_ < members_.size())
            out_.violate(m.name + " made ready, but at most " + std::to_string(most_in_) + " of " + std::to_string(members_.size()) +
                         " members were ever in at once");
    }

    // m left: every member that entered has begun to leave or give up, or lost its session since.
    void check_left(const member& m) {
        for (const auto& x : members_)
            if (x.at == member::stage::entered && !x.expired_since_entered)
                out_.violate(m.name + " left while " + x.name + " had entered and not begun to leave");
    }

    // An entered member whose client is connected to the quorum and has heard everything has its
    // node (made again on the new session if its old one died with a session; a read-only server
    // refuses that create, which waits for the quorum).
    void check_node_kept(const member& m) {
        const auto& conn = net_[m.id];
        if (conn.connected && !conn.read_only && conn.outbound.empty() && conn.inbound.empty() && !zk_.find(barrier_path + "/" + m.name))
            out_.violate(m.name + " has entered, is connected and settled, and has no node");
    }

    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(members_.size()))];
        switch (pick(4)) {
            case 0: return net_.drop_or_reconnect(conn);
            case 1: return expire(conn);
            case 2:
                if (net_.lose_reply(conn)) ++out_.lost_replies;
                return;
            default:  // (a partition that outlasts the session: the lost reply's request in doubt as it ends)
                if (!net_.lose_reply(conn)) return;
                ++out_.lost_replies;
                return expire(conn);
        }
    }

    // The member's session expires: its node goes now, whatever its machine has heard yet.
    void expire(sim_clients<double_barrier_machine::input>::connection& conn) {
        auto& m = members_[static_cast<std::size_t>(conn.id)];
        if (m.at == member::stage::entering) m.lost_while_entering = true;
        if (m.at == member::stage::entered) m.expired_since_entered = true;
        net_.expire(conn);
    }

    void check_quiescent() {
        // (One who gave up, or whose enter failed with its session, may leave the others short of N.)
        if (give_ups_ || out_.failed > 0) return;
        for (const auto& m : members_)
            if (m.at != member::stage::left) return out_.violate(m.name + " never left: it waits for ever, though all is quiet");
        const auto rest = zk_.children(barrier_path);
        if (rest && !rest->empty()) out_.violate("left under the barrier: " + (*rest)[0]);
    }

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<double_barrier_machine::input> net_;
    std::vector<member> members_;
    bool give_ups_ = false;
    bool ready_seen_ = false;
    std::size_t most_in_ = 0;  // the most members in at once so far
    int faults_left_ = 0;
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.members = 2 + static_cast<int>(rng() % 3);
    s.faults = static_cast<int>(rng() % 14);
    s.give_ups = rng() % 4 == 0;
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.members << " members, " << s.faults << " faults" << (s.give_ups ? ", give-ups" : "");
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::double_barriers
