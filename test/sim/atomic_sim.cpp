#include "atomic_sim.hpp"

#include "../../recipes/atomic/atomic_long_machine.hpp"
#include "sim_clients.hpp"
#include "sim_port.hpp"

#include <map>
#include <optional>
#include <random>
#include <sstream>

namespace zkr::sim::atomic {

namespace {

using detail::atomic_long_machine;
using detail::atomic_request;
namespace zk = detail::zk;
namespace atomic_in = detail::atomic_in;
namespace atomic_out = detail::atomic_out;

const std::string value_path = "/counters/n";
const std::string lock_folder = "/lock";

struct client {
    int id = 0;
    std::string name;
    detail::atomic_config config;
    std::optional<sim_engine<atomic_long_machine>> engine;
    int started = 0;     // operations begun
    bool busy = false;
    std::int64_t seen = 0;  // the value it last saw
    bool wants_lock = false;
    std::string lock_node;  // the promotion lock's node it was granted (empty: none)

    client(int i, detail::atomic_config c) : id(i), name("c" + std::to_string(i)), config(std::move(c)) {}
};

// One operation, and what the server did with its writes.
struct operation {
    atomic_request request;
    int applied = 0;  // writes of it that took
    std::int64_t pre = 0, post = 0;  // the one that took
    bool answered = false, succeeded = false;
};

// A write (multi) sent: its operation, and the lock node it was sent under (promoted).
struct sent_write {
    int operation = 0;
    std::string lock_node;
};

class world {
public:
    world(const schedule& s, bool traced) : s_(s), rng_(s.seed ^ 0x9e3779b9u), net_(zk_, rng_, out_) {
        out_.traced = traced;
        out_.kept_steps = 400;
        faults_left_ = s.faults + (s.storm ? 30 : 0);
        zk_.create_persistent("/", "lock", "");
        net_.late_applies = true;  // a write whose connection failed may still take (atomic_sim.hpp)
        for (int i = 0; i < s.clients; ++i) {
            net_.open();
            detail::atomic_config c;
            c.path = value_path;
            c.receipt = value_path + "/zkr-receipt-c" + std::to_string(i);
            c.receipt_ttl = s.durable ? std::chrono::milliseconds(60000) : std::chrono::milliseconds(0);
            c.optimistic_tries = s.optimistic_tries;
            c.promote = s.promote;
            c.promoted_tries = 2;
            clients_.emplace_back(i, std::move(c));
        }
        // Each client's machine on the engine, started as the recipe starts it: with a no-op event.
        for (std::size_t i = 0; i < clients_.size(); ++i) {
            auto& c = clients_[i];
            c.engine.emplace(net_, c.id, 0, atomic_long_machine(c.config), [this, i](const atomic_long_machine::action& a) { on_outcome(clients_[i], a); });
            c.engine->link().on_send = [this, i](const zk::op& op) { on_send(clients_[i], op); };
            c.engine->start(zk::timer_due{});
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
        // (what, client): 0 apply, 1 deliver, 2 a timer runs out, 3 begin an operation, 4 the lock answers
        std::vector<std::pair<int, int>> choices;
        for (auto& c : clients_) {
            const auto& conn = net_[c.id];
            if (conn.connected && !conn.outbound.empty()) choices.push_back({0, c.id});
            if (!conn.inbound.empty()) choices.push_back({1, c.id});
            if (!c.engine->link().timers().empty()) choices.push_back({2, c.id});
            if (!c.busy && c.started < s_.operations) choices.push_back({3, c.id});
            if (c.wants_lock && (lock_free() || pick(8) == 0)) choices.push_back({4, c.id});
            // (Seldom while there is other work: a late write is the more telling the later it comes.)
            if (!conn.escaped.empty() && !s_.storm && pick(6) == 0) choices.push_back({5, c.id});
        }
        if (faults_left_ > 0 && (choices.empty() || pick(100) < (s_.storm ? 30u : 5u))) return fault(), true;
        if (choices.empty())
            for (auto& c : clients_)
                if (!net_[c.id].escaped.empty()) choices.push_back({5, c.id});
        if (choices.empty()) return false;  // quiescence
        const auto [what, id] = choices[pick(choices.size())];
        auto& c = clients_[static_cast<std::size_t>(id)];
        switch (what) {
            case 0: apply(c); break;
            case 1: {
                auto [who, e] = net_.deliver(net_[c.id]);
                deliver_asked(c.engine->link(), std::move(e), out_, c.name);
                break;
            }
            case 2: c.engine->link().fire_timer(pick(c.engine->link().timers().size())); break;
            case 3: begin(c); break;
            case 4: answer_lock(c); break;
            default: late_write(c); break;
        }
        return true;
    }

    void begin(client& c) {
        atomic_request r;
        switch (pick(8)) {
            case 0: r = {atomic_request::kind::compare_and_set, c.seen + 1, c.seen}; break;
            case 1: r = {atomic_request::kind::add, 2}; break;
            case 2: r = {atomic_request::kind::add, -1}; break;
            case 3: r = {atomic_request::kind::get}; break;
            case 4: r = {atomic_request::kind::set, c.seen + 3}; break;
            default: r = {atomic_request::kind::add, 1}; break;
        }
        const int index = c.started++;
        ops_[{c.id, index}].request = r;
        c.busy = true;
        out_.note(c.name + " begins operation " + std::to_string(index) + " (" + describe(r) + ")");
        c.engine->post(atomic_in::begin{r, net_[c.id].session});
    }

    static std::string describe(const atomic_request& r) {
        switch (r.what) {
            case atomic_request::kind::get: return "get";
            case atomic_request::kind::add: return "add " + std::to_string(r.operand);
            case atomic_request::kind::set: return "set " + std::to_string(r.operand);
            case atomic_request::kind::compare_and_set: return "cas " + std::to_string(r.expected) + " -> " + std::to_string(r.operand);
        }
        return "?";
    }

    // The server applies c's next request; a write that took is checked against its operation.
    void apply(client& c) {
        const auto lock = lock_state(c);
        const auto pre = value();
        const auto a = net_.apply(net_[c.id]);
        out_.note(c.name + " applied #" + std::to_string(a.reply.id) + (a.reply.ec ? " " + a.reply.ec.message() : " ok"));
        took(c, a.op, a.reply, pre, lock);
    }

    // The server applies one of c's requests that failed with their connection (if its session
    // lives), checked as any other write.
    void late_write(client& c) {
        const auto lock = lock_state(c);
        const auto pre = value();
        if (const auto done = net_.apply_escaped(net_[c.id])) {
            if (std::holds_alternative<zk::multi>(done->first)) ++out_.late_writes;
            took(c, done->first, done->second, pre, lock);
        }
    }

    std::int64_t value() const {
        const node* n = zk_.find(value_path);
        return n ? detail::long_from_data(n->data).value_or(0) : 0;
    }

    // The promotion lock's node c holds on its session now (empty: none).
    std::string lock_state(const client& c) const {
        const node* n = current_lock_.empty() ? nullptr : zk_.find(current_lock_);
        return n && n->owner == net_.at(c.id).session ? current_lock_ : std::string();
    }

    void took(client& c, const zk::op& sent, const zk::reply& reply, std::int64_t pre, const std::string& lock_held) {
        const auto* m = std::get_if<zk::multi>(&sent);
        if (!m || reply.ec) return;
        const auto it = writes_.find({c.id, m->id});
        if (it == writes_.end()) return out_.violate(c.name + ": a write the world never saw sent was applied");
        auto& op = ops_.at({c.id, it->second.operation});
        const auto post = value();
        ++op.applied;
        op.pre = pre;
        op.post = post;
        applied_sum_ += post - pre;
        out_.note(c.name + "'s operation " + std::to_string(it->second.operation) + " took: " + std::to_string(pre) + " -> " + std::to_string(post));
        if (op.applied > 1) out_.violate(c.name + "'s operation " + std::to_string(it->second.operation) + " was applied twice");
        if (op.answered && !op.succeeded) out_.violate(c.name + "'s operation " + std::to_string(it->second.operation) + " took after it was answered otherwise");
        // Under the promotion lock: only while that lock's node is there, on this session.
        if (!it->second.lock_node.empty() && lock_held != it->second.lock_node)
            out_.violate(c.name + " wrote under the promotion lock " + it->second.lock_node + ", which it no longer held");
    }

    // A write (multi) c's engine sends: its operation, and the lock it is sent under.
    void on_send(client& c, const zk::op& op) {
        if (const auto* m = std::get_if<zk::multi>(&op))
            writes_[{c.id, m->id}] = {c.started - 1, c.engine->machine().promoted() ? c.lock_node : std::string()};
    }

    // What c's machine decided, other than a request or a timer (its engine runs those).
    void on_outcome(client& c, const atomic_long_machine::action& a) {
        if (std::holds_alternative<atomic_out::lock_needed>(a)) {
            out_.note(c.name + " asks for the promotion lock");
            ++out_.promoted;
            release_lock(c);  // (one kept from before died with its session)
            c.wants_lock = true;
        } else if (std::holds_alternative<atomic_out::lock_done>(a)) {
            c.wants_lock = false;
            release_lock(c);
        } else if (const auto* f = std::get_if<atomic_out::finished>(&a)) {
            answered(c, *f);
        }
    }

    void answered(client& c, const atomic_out::finished& f) {
        const int index = c.started - 1;
        auto& op = ops_.at({c.id, index});
        const auto who = c.name + "'s operation " + std::to_string(index);
        c.busy = false;
        op.answered = true;
        if (f.ec) {
            out_.note(who + " failed: " + f.reason);
            if (f.ec != errc::session_expired || s_.durable) return out_.violate(who + " failed: " + f.ec.message() + ": " + f.reason);
            ++out_.unknown;
            op.succeeded = true;  // (either is allowed: nothing to check later)
            return;
        }
        op.succeeded = f.succeeded;
        out_.note(who + (f.succeeded ? " succeeded: " : " did not succeed: ") + std::to_string(f.pre) + " -> " + std::to_string(f.post));
        if (op.request.what == atomic_request::kind::get) {
            c.seen = f.pre;
            return;
        }
        if (f.succeeded) {
            ++out_.succeeded;
            if (op.applied != 1) return out_.violate(who + " succeeded, but " + std::to_string(op.applied) + " of its writes took");
            if (f.pre != op.pre || f.post != op.post)
                return out_.violate(who + " answered " + std::to_string(f.pre) + " -> " + std::to_string(f.post) + ", but its write made " +
                                    std::to_string(op.pre) + " -> " + std::to_string(op.post));
            c.seen = f.post;
        } else {
            ++out_.not_succeeded;
            if (op.applied != 0) return out_.violate(who + " did not succeed, but its write took");
            c.seen = f.pre;
        }
    }

    // ---- the promotion lock: one node at a time under /lock, of its holder's session ----------
    bool lock_free() const { return current_lock_.empty() || !zk_.find(current_lock_); }

    void answer_lock(client& c) {
        c.wants_lock = false;
        auto& conn = net_[c.id];
        if (lock_free() && zk_.alive(conn.session) && pick(6) != 0) {
            const auto made = zk_.create_ephemeral(conn.session, lock_folder, c.name + "-" + std::to_string(++locks_), "");
            current_lock_ = made.path;
            c.lock_node = made.path;
            out_.note(c.name + " is granted the promotion lock " + made.path);
            return c.engine->post(atomic_in::lock_granted{conn.session, made.path});
        }
        out_.note(c.name + "'s promotion lock timed out");
        c.engine->post(atomic_in::lock_refused{});
    }

    void release_lock(client& c) {
        if (c.lock_node.empty()) return;
        if (zk_.find(c.lock_node)) zk_.remove(c.lock_node);
        c.lock_node.clear();
        net_.route_fired();
    }

    void fault() {
        --faults_left_;
        ++out_.faults;
        auto& conn = net_[static_cast<int>(pick(clients_.size()))];
        const bool escaped_before = !conn.escaped.empty();  // (one that escapes now arrives at a later fault)
        bool session_ends = false;
        switch (pick(5)) {
            case 0:
            case 1: net_.drop_or_reconnect(conn); break;  // (twice as often: its failed writes may take later)
            case 2: net_.expire(conn); break;
            case 3:
                if (net_.lose_reply(conn)) ++out_.lost_replies;
                break;
            default:  // a partition that outlasts the session: the lost reply's request in doubt as it ends
                if (net_.lose_reply(conn)) {
                    ++out_.lost_replies;
                    session_ends = true;
                }
                break;
        }
        // A storm: during an outage a write that failed with its connection arrives late, and the
        // outage goes on past the session. (A partition that outlasts the session may bring one
        // too: forwarded to the leader while the client was cut off.)
        if (((s_.storm && escaped_before) || session_ends) && !conn.escaped.empty() && pick(2) == 0) {
            late_write(clients_[static_cast<std::size_t>(conn.id)]);
            ++out_.faults;
            session_ends = true;
        }
        if (session_ends) net_.expire(conn);
    }

    void check_quiescent() {
        for (const auto& [key, op] : ops_)
            if (!op.answered) return out_.violate("c" + std::to_string(key.first) + "'s operation " + std::to_string(key.second) + " never got its answer");
        for (const auto& c : clients_) {
            if (c.started < s_.operations) return out_.violate(c.name + " never began all its operations");
            if (!c.lock_node.empty() && zk_.find(c.lock_node)) return out_.violate(c.name + " still holds the promotion lock, its operations over");
        }
        const node* n = zk_.find(value_path);
        const std::int64_t value = n ? detail::long_from_data(n->data).value_or(-999999) : 0;
        if (value != applied_sum_)
            out_.violate("the value is " + std::to_string(value) + ", but the writes that took add up to " + std::to_string(applied_sum_));
    }

    std::size_t pick(std::size_t n) { return sim::pick(rng_, n); }

    const schedule& s_;
    std::mt19937_64 rng_;
    zookeeper zk_;
    outcome out_;
    sim_clients<atomic_long_machine::input> net_;
    std::vector<client> clients_;
    std::map<std::pair<int, int>, operation> ops_;           // (client, index)
    std::map<std::pair<int, zk::ticket>, sent_write> writes_;  // (client, the multi's ticket)
    std::string current_lock_;
    int locks_ = 0;
    std::int64_t applied_sum_ = 0;
    int faults_left_ = 0;
};

}  // namespace

schedule draw_schedule(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    schedule s;
    s.seed = seed;
    s.clients = 1 + static_cast<int>(rng() % 4);
    s.operations = 1 + static_cast<int>(rng() % 5);
    s.faults = static_cast<int>(rng() % 14);
    s.optimistic_tries = 1 + static_cast<unsigned>(rng() % 3);
    s.promote = rng() % 2 == 0;
    s.durable = rng() % 3 == 0;
    s.storm = rng() % 2 == 0;  // (drawn last: the other draws stay as they were)
    return s;
}

std::string describe(const schedule& s) {
    std::ostringstream o;
    o << "seed " << s.seed << ": " << s.clients << " clients, " << s.operations << " operations each, " << s.faults << " faults, "
      << s.optimistic_tries << " optimistic tries" << (s.promote ? ", promoted" : "") << (s.durable ? ", durable receipts" : "") << (s.storm ? ", a storm" : "");
    return o.str();
}

outcome run(const schedule& s, bool traced) { return world(s, traced).run(); }

}  // namespace zkr::sim::atomic
