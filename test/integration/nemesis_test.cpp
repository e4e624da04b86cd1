// The fault suite (issue 5): K worker processes (zkr_fault_worker) contend on a recipe through TCP
// proxies while a nemesis injects faults; then the faults stop and the checker proves, from the
// workers' histories (history.hpp), that no two proven holds overlapped, tokens rose, no update
// was lost, every worker acquired again, and no node was left behind.
//
// ZKR_FAULT_SECONDS sets how long faults are injected (default 8, 5 in sanitized builds; the soak in docs/reliability.md
// uses more), ZKR_FAULT_SEED replays a random schedule (the seed is printed).
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "fault_run.hpp"

#include <zkr/interprocess_mutex.hpp>

#include "zkr_catch.hpp"

#include <signal.h>

#include <filesystem>
#include <future>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

using namespace std::chrono_literals;
using zkr::test::mono_now;
using zkr::test::mono_ns;

namespace {

using zkr::test::fault_run;
using zkr::test::run_options;
using zkr::test::announced_fault_seed;

// --- the nemeses: each one step ---

void kill_connected_server(fault_run& r) {
    const int w = r.random(0, r.workers() - 1);
    int server = -1;
    if (auto s = r.session_of(w)) server = r.zk().server_of_session(s->first);
    if (server < 0) server = r.random(0, r.servers() - 1);
    r.zk().kill(server);
    r.fault("kill -9 server " + std::to_string(server));
    std::this_thread::sleep_for(std::chrono::milliseconds(r.random(200, 1500)));
    r.zk().start(server);
}

void kill_leader(fault_run& r) {
    const int leader = r.zk().leader();
    if (leader < 0) return;
    r.zk().kill(leader);
    r.fault("kill -9 leader " + std::to_string(leader));
    std::this_thread::sleep_for(std::chrono::milliseconds(r.random(200, 1500)));
    r.zk().start(leader);
}

void pause_server(fault_run& r) {
    const int server = r.random(0, r.servers() - 1);
    r.zk().pause(server);
    r.fault("SIGSTOP server " + std::to_string(server));
    std::this_thread::sleep_for(r.session() + std::chrono::milliseconds(r.random(200, 1500)));
    r.zk().resume(server);
}

struct paused_hold {
    int worker;
    mono_ns from, to;
};

void pause_holder(fault_run& r, std::vector<paused_hold>& paused) {
    const int w = r.holder();
    if (w < 0) return;
    r.pause_worker(w);
    const mono_ns from = mono_now();
    const bool was_holding = fault_run::is_holding(r.last_line(w));  // the file cannot change while it is stopped
    r.fault(std::string("SIGSTOP worker ") + std::to_string(w) + (was_holding ? " (holding)" : ""));
    std::this_thread::sleep_for(r.session() + std::chrono::milliseconds(r.random(500, 1500)));
    r.resume_worker(w);
    if (was_holding) paused.push_back({w, from, mono_now()});
}

void expire_random_session(fault_run& r) {
    const int w = r.random(0, r.workers() - 1);
    const auto s = r.session_of(w);
    if (!s) return;
    try {
        zkr::test::expire_session(r.zk().connect_string(), s->first, s->second);
        r.fault("expire session of worker " + std::to_string(w));
    } catch (const std::exception&) {
        // The session was already gone (or moving): nothing to expire this time.
    }
}

void network_fault(fault_run& r) {
    const int p = r.random(0, r.servers() - 1);
    switch (r.random(0, 3)) {
    case 0:  // shorter than the session timeout: the sessions survive
        r.proxy(p).blackhole(true);
        r.fault("blackhole proxy " + std::to_string(p) + " briefly");
        std::this_thread::sleep_for(std::chrono::milliseconds(r.random(300, 1500)));
        r.proxy(p).blackhole(false);
        break;
    case 1:  // longer: the clients declare their sessions lost
        r.proxy(p).blackhole(true);
        r.fault("blackhole proxy " + std::to_string(p) + " past the session timeout");
        std::this_thread::sleep_for(r.session() + std::chrono::milliseconds(r.random(200, 1000)));
        r.proxy(p).blackhole(false);
        break;
    case 2:
        r.proxy(p).reset_all();
        r.fault("reset connections of proxy " + std::to_string(p));
        break;
    default:  // replies lost after the server applied the requests, then the connection drops
        r.proxy(p).drop_replies(true);
        r.fault("drop replies of proxy " + std::to_string(p));
        std::this_thread::sleep_for(std::chrono::milliseconds(r.random(100, 800)));
        r.proxy(p).reset_all();
        r.proxy(p).drop_replies(false);
        break;
    }
}

void restart_everything(fault_run& r) {
    for (int i = 0; i < r.servers(); ++i) r.zk().kill(i);
    r.fault("kill -9 every server");
    std::this_thread::sleep_for(std::chrono::milliseconds(r.random(100, 1000)));
    r.zk().start_all();
}

// A paused holder whose session expired meanwhile (it started a new one after the pause) must have
// learnt that it lost its hold: never proven after the pause, and not released as still held.
// A pause the session survived (the server's clock for it may have restarted with a new leader)
// keeps the hold, rightly. Returns how many paused holds lost their session.
int check_paused_holds(const fault_run::figures& f, const std::vector<paused_hold>& paused) {
    int expired = 0;
    for (const auto& p : paused) {
        const auto& w = f.histories.at(static_cast<std::size_t>(p.worker));
        const bool new_session = std::any_of(w.sessions.begin(), w.sessions.end(), [&](const auto& s) { return s.at > p.from; });
        const auto it = std::find_if(w.holds.rbegin(), w.holds.rend(), [&](const auto& h) { return h.granted < p.from; });
        REQUIRE(it != w.holds.rend());
        if (!new_session) continue;
        ++expired;
        INFO("worker " << p.worker << " token " << it->token);
        CHECK(!(it->proven_until && *it->proven_until > p.to));
        CHECK(it->state_at_release != "held");
    }
    return expired;
}

const char* recipe_for(int i) {
    static const char* recipes[] = {"mutex", "fair", "semaphore_mutex", "semaphore:2"};
    return recipes[i % 4];
}

}  // namespace

TEST_CASE("nemesis harness: workers without a lock are caught overlapping (the checker can fail)") {
    fault_run r({.servers = 1, .recipe = "unlocked", .workers = 3, .hold_ms = 5});
    std::this_thread::sleep_for(2s);
    const auto f = r.finish("no lock", /*expect_violations=*/true);
    CHECK(f.check.max_concurrent > 1);
}

TEST_CASE("nemesis 1: kill -9 and restart the client's server, standalone") {
    fault_run r({.servers = 1, .recipe = recipe_for(0)});
    r.for_fault_time([&] { kill_connected_server(r); });
    r.finish("kill -9 server");
}

TEST_CASE("nemesis 1: kill -9 and restart the client's server, ensemble") {
    fault_run r({.servers = 3, .recipe = recipe_for(1)});
    r.for_fault_time([&] { kill_connected_server(r); });
    r.finish("kill -9 server");
}

TEST_CASE("nemesis 2: kill the leader, ensemble") {
    fault_run r({.servers = 3, .recipe = recipe_for(2)});
    r.for_fault_time([&] { kill_leader(r); });
    r.finish("kill leader");
}

TEST_CASE("nemesis 3: SIGSTOP a server past the session timeout, standalone") {
    fault_run r({.servers = 1, .recipe = recipe_for(3)});
    r.for_fault_time([&] { pause_server(r); });
    r.finish("SIGSTOP server");
}

TEST_CASE("nemesis 3: SIGSTOP a server past the session timeout, ensemble") {
    fault_run r({.servers = 3, .recipe = recipe_for(0)});
    r.for_fault_time([&] { pause_server(r); });
    r.finish("SIGSTOP server");
}

// Holds of 100 ms, so a pause often lands inside one; at least one paused holder must lose its session.
void run_pause_holder(int servers, const char* recipe) {
    fault_run r({.servers = servers, .recipe = recipe, .hold_ms = 100});
    std::vector<paused_hold> paused;
    r.for_fault_time([&] { pause_holder(r, paused); });
    const auto f = r.finish("SIGSTOP holder");
    CHECK(check_paused_holds(f, paused) >= 1);
}

TEST_CASE("nemesis 4: SIGSTOP a holder past its session timeout, standalone") { run_pause_holder(1, recipe_for(1)); }

TEST_CASE("nemesis 4: SIGSTOP a holder past its session timeout, ensemble") { run_pause_holder(3, recipe_for(2)); }

TEST_CASE("nemesis 5: expire sessions at random, standalone") {
    fault_run r({.servers = 1, .recipe = recipe_for(3)});
    r.for_fault_time([&] { expire_random_session(r); });
    r.finish("expire sessions");
}

TEST_CASE("nemesis 5: expire sessions at random, ensemble") {
    fault_run r({.servers = 3, .recipe = recipe_for(0)});
    r.for_fault_time([&] { expire_random_session(r); });
    r.finish("expire sessions");
}

TEST_CASE("nemesis 6: blackholes, resets and lost replies through a TCP proxy, standalone") {
    fault_run r({.servers = 1, .recipe = recipe_for(1)});
    r.for_fault_time([&] { network_fault(r); });
    r.finish("network");
}

TEST_CASE("nemesis 6: blackholes, resets and lost replies through a TCP proxy, ensemble") {
    fault_run r({.servers = 3, .recipe = recipe_for(2)});
    r.for_fault_time([&] { network_fault(r); });
    r.finish("network");
}

TEST_CASE("nemesis 7: restart every server from its data, standalone") {
    fault_run r({.servers = 1, .recipe = recipe_for(3)});
    r.for_fault_time([&] { restart_everything(r); });
    r.finish("restart all");
}

TEST_CASE("nemesis 7: restart the whole ensemble from its data") {
    fault_run r({.servers = 3, .recipe = recipe_for(0)});
    r.for_fault_time([&] { restart_everything(r); });
    r.finish("restart all");
}

TEST_CASE("nemesis: leader election, 5 processes, a random schedule of every nemesis, ensemble") {
    announced_fault_seed("leader election");
    // Every term a leader proves (a guarded write) lies apart from every other: never two leaders
    // with a valid hold; epochs rise; every process leads again after the faults.
    fault_run r({.servers = 3, .recipe = "latch", .workers = 5, .hold_ms = 50});
    std::vector<paused_hold> paused;
    r.for_fault_time([&] {
        switch (r.random(0, 5)) {
        case 0: kill_connected_server(r); break;
        case 1: kill_leader(r); break;
        case 2: pause_holder(r, paused); break;
        case 3: expire_random_session(r); break;
        case 4: network_fault(r); break;
        default: pause_server(r); break;
        }
    });
    const auto f = r.finish("leader election");
    check_paused_holds(f, paused);
}

TEST_CASE("nemesis: a random schedule of every nemesis, from a printed seed, ensemble") {
    const int seed = announced_fault_seed("fault-suite");
    fault_run r({.servers = 3, .recipe = recipe_for(seed)});
    std::vector<paused_hold> paused;
    r.for_fault_time([&] {
        switch (r.random(0, 6)) {
        case 0: kill_connected_server(r); break;
        case 1: kill_leader(r); break;
        case 2: pause_server(r); break;
        case 3: pause_holder(r, paused); break;
        case 4: expire_random_session(r); break;
        case 5: network_fault(r); break;
        default: restart_everything(r); break;
        }
    });
    const auto f = r.finish("random schedule");
    check_paused_holds(f, paused);
}

// --- partitions: each server and each group of workers in a network namespace of its own ---

namespace {

// Partition runs: holds of 2.5 s, so a cut lands inside one, on 2 workers (one per side).
run_options partition_run(const char* recipe) {
    return {.servers = 3, .partitions = true, .recipe = recipe, .workers = 2, .hold_ms = 2500, .session_ms = 4000,
            .min_proven_holds = 3};
}

struct cut_hold {
    int worker;
    mono_ns at;      // the cut
    mono_ns healed;
};

// The hold of worker w in progress at time t (granted before, not released before), if any.
const zkr::test::hold_record* hold_at(const fault_run::figures& f, int w, mono_ns t) {
    for (const auto& h : f.histories.at(static_cast<std::size_t>(w)).holds)
        if (h.granted <= t && (!h.released || *h.released > t)) return &h;
    return nullptr;
}

std::optional<mono_ns> first_state(const zkr::test::hold_record& h, mono_ns after, std::initializer_list<const char*> states) {
    for (const auto& [t, s] : h.states)
        if (t >= after && std::find(states.begin(), states.end(), s) != states.end()) return t;
    return std::nullopt;
}

// The leader and the holder's group of workers on one side, the two followers and the other
// group on the other: the minority leader loses its quorum and closes its clients' connections.
// Returns when the cut was made (nullopt: no holder, or no leader, now).
std::optional<mono_ns> cut_leader_with(fault_run& r, int w) {
    const int leader = r.zk().leader();
    if (w < 0 || leader < 0) return std::nullopt;
    auto& lab = r.lab();
    const auto minority = fault_run::worker_ns(w), majority = fault_run::worker_ns(w + 1);
    const auto l = fault_run::server_ns(leader);
    for (int f = 0; f < r.servers(); ++f) {
        if (f == leader) continue;
        lab.cut(l, fault_run::server_ns(f));
        lab.cut(minority, fault_run::server_ns(f));
    }
    lab.cut(majority, l);
    r.fault("leader " + l + " cut off with " + minority + " (worker " + std::to_string(w) + " holding)");
    return mono_now();
}

void cut_leader_with_its_clients(fault_run& r, std::vector<cut_hold>& cuts) {
    const int w = r.holder();
    const auto at = cut_leader_with(r, w);
    if (!at) return;
    // Long enough for the majority to notice the leader is gone (syncLimit: 2 s here), elect a new
    // one, and then expire the holder's session: a new leader starts every session's timeout anew.
    // (A shorter cut lets the holder reconnect with its session alive, and rightly hold again.)
    std::this_thread::sleep_for(r.session() + std::chrono::milliseconds(r.random(4500, 5500)));
    // And on, 20 s at most, until a majority worker has been granted (check_minority_holders needs
    // that grant): right after an earlier fault healed, a follower may still be syncing, and the
    // election, with the holder's expiry a session timeout after it, then outlasts the cut.
    zkr::test::eventually([&] { return r.other_granted_after(w, *at); }, 20s);
    r.lab().heal_all();
    cuts.push_back({w, *at, mono_now()});
}

// The time of a history line ("grant <requested> <granted> ..." or "read <t> ..."), if it is one.
std::optional<mono_ns> line_time(const std::string& line, const char* kind) {
    std::istringstream in(line);
    std::string k;
    mono_ns a = 0, b = 0;
    in >> k >> a;
    if (k != kind || !in) return std::nullopt;
    if (k == "grant" && !(in >> b)) return std::nullopt;
    return k == "grant" ? b : a;
}

// A worker whose hold began (its fenced read) less than 300 ms ago: waits up to `within`.
int fresh_holder(fault_run& r, std::chrono::seconds within) {
    int found = -1;
    zkr::test::eventually([&] {
        for (int w = 0; w < r.workers(); ++w)
            if (const auto t = line_time(r.last_line(w), "read"); t && mono_now() - *t < 300'000'000) found = w;
        return found >= 0;
    }, within);
    return found;
}

// The state a hold's listener last heard before t ("held" if nothing yet).
std::string state_before(const zkr::test::hold_record& h, mono_ns t) {
    std::string s = "held";
    for (const auto& [at, state] : h.states)
        if (at < t) s = state;
    return s;
}

// What the other workers did around a cut, for a failed check's message: each hold's request,
// grant and release in ms from the cut, its token, the states its listener heard, and the acquires
// that returned without a hold; holds released more than 10 s before the cut are left out.
// (Partition 5 failed once on a semaphore with no majority grant in the window, and the
// histories were gone with the run.)
std::string others_holds(const fault_run::figures& f, const cut_hold& c) {
    const auto ms = [&](mono_ns t) { return std::to_string((t - c.at) / 1'000'000); };
    std::ostringstream out;
    for (const auto& w : f.histories) {
        if (w.worker == c.worker) continue;
        out << "worker " << w.worker << " (" << w.failed_acquires << " failed acquires, " << w.unknown_acquires << " unknown):";
        for (const auto& h : w.holds) {
            if (h.released && *h.released < c.at - 10'000'000'000) continue;
            out << " [asked " << ms(h.requested) << " granted " << ms(h.granted) << " token " << h.token;
            for (const auto& [t, state] : h.states) out << " " << state << "@" << ms(t);
            out << " released " << (h.released ? ms(*h.released) : std::string("never")) << "]";
        }
        out << "; ";
    }
    return out.str();
}

// The holder went doubtful within 2/3 of the session timeout, and its hold ended: lost, or
// released by its holder meanwhile (releasing, then released once the session is gone). A majority
// worker held meanwhile with a higher token, and from that grant on the minority holder never read
// held. Returns the holds checked.
int check_minority_holders(const fault_run::figures& f, const std::vector<cut_hold>& cuts, std::chrono::milliseconds session) {
    int checked = 0;
    const mono_ns doubt_limit = std::chrono::nanoseconds(session * 2 / 3 + 500ms).count();
    for (const auto& c : cuts) {
        const auto* h = hold_at(f, c.worker, c.at);
        // Released (normally) before the partition could reach it, or already in doubt from an
        // earlier fault: nothing to time.
        if (!h || (h->released && *h->released < c.at + doubt_limit) || state_before(*h, c.at) != "held") continue;
        ++checked;
        std::string heard;
        for (const auto& [t, state] : h->states) heard += state + "@" + std::to_string((t - c.at) / 1'000'000) + "ms ";
        INFO("worker " << c.worker << " token " << h->token << ", states after the cut: " << heard);
        const auto doubt = first_state(*h, c.at, {"doubtful", "lost"});
        CHECK(doubt);
        if (!doubt) continue;
        CHECK(*doubt - c.at <= doubt_limit);
        CHECK(first_state(*h, *doubt, {"lost", "released"}));
        // The majority's next grant, and the minority holder never held from then on. (Right after
        // the cut the old leader may still answer a re-validation before it notices it lost its
        // quorum: a short `held` then is true, since nobody else can be granted before it.)
        std::optional<mono_ns> majority_grant;
        for (const auto& w : f.histories)
            for (const auto& other : w.holds)
                if (w.worker != c.worker && other.granted > c.at && other.granted < c.healed && other.token > h->token &&
                    (!majority_grant || other.granted < *majority_grant))
                    majority_grant = other.granted;
        INFO("a majority worker held between the cut and the heal with a higher token");
        INFO("the other workers' holds, in ms from the cut (healed at " << (c.healed - c.at) / 1'000'000 << " ms): " << others_holds(f, c));
        CHECK(majority_grant);
        if (majority_grant) CHECK_FALSE(first_state(*h, *majority_grant, {"held"}));
    }
    return checked;
}

// The follower the holder is connected to, cut off from everyone (but the test).
void cut_holders_follower(fault_run& r, std::vector<cut_hold>& cuts) {
    const int w = r.holder();
    if (w < 0) return;
    const auto session = r.session_of(w);
    const int server = session ? r.zk().server_of_session(session->first) : -1;
    if (server < 0) return;
    if (server == r.zk().leader()) {
        // The holder's client is on the leader (each client picks a server at random, so both
        // workers may stay there all along): move it to a follower by cutting its group's link to
        // the leader until it has reconnected elsewhere, with its session. A later step cuts that
        // follower off.
        const auto group = fault_run::worker_ns(w), leader = fault_run::server_ns(server);
        r.lab().cut(group, leader);
        r.fault("moved " + group + " off the leader " + leader);
        zkr::test::eventually([&] {
            const int now = r.zk().server_of_session(session->first);
            return now >= 0 && now != server;
        }, r.session() * 2);
        r.lab().heal(group, leader);
        return;
    }
    r.lab().isolate(fault_run::server_ns(server));
    const mono_ns at = mono_now();
    r.fault("follower s" + std::to_string(server) + " cut off (worker " + std::to_string(w) + " holding through it)");
    std::this_thread::sleep_for(r.session() + std::chrono::milliseconds(r.random(500, 1500)));
    r.lab().heal_all();
    cuts.push_back({w, at, mono_now()});
}

// Kept (reconnected to the majority in time: held again, or released normally) or lost cleanly
// (lost, and never proven after the cut). Returns {kept, lost}.
std::pair<int, int> check_follower_holders(const fault_run::figures& f, const std::vector<cut_hold>& cuts) {
    int kept = 0, lost = 0;
    for (const auto& c : cuts) {
        const auto* h = hold_at(f, c.worker, c.at);
        if (!h) continue;
        INFO("worker " << c.worker << " token " << h->token);
        if (first_state(*h, c.at, {"lost"})) {
            ++lost;
            CHECK(!(h->proven_until && *h->proven_until > c.at));
        } else {
            ++kept;
            CHECK(h->state_at_release != "lost");
        }
    }
    return {kept, lost};
}

// Servers a and c cannot talk; both still talk to b.
void bridge(fault_run& r, std::chrono::seconds how_long) {
    const int a = r.random(0, 2), c = (a + r.random(1, 2)) % 3;
    r.lab().cut(fault_run::server_ns(a), fault_run::server_ns(c));
    r.fault("bridge: s" + std::to_string(a) + " and s" + std::to_string(c) + " apart, both with the third");
    std::this_thread::sleep_for(how_long);
    r.lab().heal_all();
}

// Links between servers, and between workers and servers, go down and up at random.
void flap(fault_run& r, std::chrono::seconds how_long) {
    const auto links = r.lab().links();
    const auto end = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < end) {
        const auto& [a, b] = links.at(static_cast<std::size_t>(r.random(0, static_cast<int>(links.size()) - 1)));
        if (a == zkr::test::net_lab::host || b == zkr::test::net_lab::host) continue;
        if (r.lab().is_cut(a, b)) r.lab().heal(a, b);
        else {
            r.lab().cut(a, b);
            r.fault("flap " + a + "-" + b);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(r.random(200, 1500)));
    }
    r.lab().heal_all();
}

std::chrono::seconds long_partition() {
    return std::chrono::seconds(zkr::test::env_int("ZKR_PARTITION_SECONDS", zkr::test::default_fault_seconds == 8 ? 30 : 12));
}

}  // namespace

TEST_CASE("partition 1: the leader cut off with its clients, the holder on the minority side") {
    // Holds of 12 s: the cut lands at the start of one, and outlasts the majority's grant (the
    // session's expiry under a new leader, about 7 s on), so the minority holder, which goes on
    // unaware (it does not look at its state), writes with its stale token after the new holder
    // has used the store: the store must refuse it.
    auto o = partition_run(recipe_for(0));
    o.hold_ms = 12000;
    o.min_proven_holds = 1;
    fault_run r(o);
    const int w = fresh_holder(r, 30s);
    REQUIRE(w >= 0);
    const auto at = cut_leader_with(r, w);
    REQUIRE(at);
    // The cut holds until a majority worker has begun a hold (its fenced read), at most 30 s.
    const int other = (w + 1) % r.workers();
    const bool majority_held = zkr::test::eventually([&] {
        const auto t = line_time(r.last_line(other), "read");
        return t && *t > *at;
    }, 30s);
    r.lab().heal_all();
    const std::vector<cut_hold> cuts{{w, *at, mono_now()}};
    const auto f = r.finish("partition: leader cut off with its clients");
    REQUIRE(majority_held);
    CHECK(check_minority_holders(f, cuts, r.session()) == 1);
    // The minority holder's write came after the majority's hold began, and was refused.
    const auto* h = hold_at(f, w, *at);
    REQUIRE(h);
    REQUIRE(h->written);
    std::optional<mono_ns> majority_read;
    for (const auto& other_hold : f.histories.at(static_cast<std::size_t>(other)).holds)
        if (other_hold.granted > *at && other_hold.token > h->token && !majority_read) majority_read = other_hold.granted;
    REQUIRE(majority_read);
    INFO("the majority was granted " << (*majority_read - *at) / 1'000'000 << " ms after the cut; the minority wrote "
                                    << (*h->written - *at) / 1'000'000 << " ms after it");
    REQUIRE(*h->written > *majority_read);
    CHECK(h->write_accepted == false);
    CHECK(f.check.writes_refused >= 1);
    std::cout << "partition leader cut: majority granted " << (*majority_read - *at) / 1'000'000
              << " ms after the cut, the stale holder's write " << (*h->written - *at) / 1'000'000 << " ms after it: "
              << (h->write_accepted == false ? "refused" : "ACCEPTED") << std::endl;
}

TEST_CASE("partition 2: the follower a holder is connected to, cut off") {
    fault_run r(partition_run(recipe_for(1)));
    std::vector<cut_hold> cuts;
    r.for_fault_time([&] { cut_holders_follower(r, cuts); });
    // A step cuts only while a worker holds through a follower, not through the leader: keep
    // trying (for 40 s at most) until one did.
    const auto give_up = std::chrono::steady_clock::now() + 40s;
    while (cuts.empty() && std::chrono::steady_clock::now() < give_up) {
        cut_holders_follower(r, cuts);
        std::this_thread::sleep_for(200ms);
    }
    const auto f = r.finish("partition: holder's follower cut off");
    const auto [kept, lost] = check_follower_holders(f, cuts);
    std::cout << "follower cut off: holds kept " << kept << ", lost cleanly " << lost << std::endl;
    CHECK(kept + lost >= 1);
}

TEST_CASE("partition 3: a bridge (two servers apart, both with the third), then links flapping") {
    fault_run r(partition_run(recipe_for(2)));
    bridge(r, long_partition());
    flap(r, long_partition());
    r.finish("partition: bridge, then flapping");
}

namespace {
// Three servers that serve read-only when cut off from the quorum, and a client's options that reach
// only a follower (the one the tests cut off; the test's own link to it is never cut).
struct read_only_setup {
    std::vector<std::string> servers = {"s0", "s1", "s2"};
    zkr::test::net_lab lab{servers};
    std::unique_ptr<zkr::test::zk_cluster> zk;
    int lonely = 0;

    read_only_setup() {
        lab.link_all(servers);
        for (const auto& s : servers) lab.link(zkr::test::net_lab::host, s);
        zkr::test::cluster_options co{.servers = 3, .tick_ms = 200};
        for (const auto& s : servers) {
            co.hosts.push_back(lab.address(s));
            co.netns_files.push_back(lab.netns_file(s));
        }
        co.jvm_properties = {"-Dreadonlymode.enabled=true"};
        // (Sessions of 10 s, longer than 20 ticks: partition 6 needs time to move a client around.)
        co.config_lines = {"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true", "maxSessionTimeout=30000"};
        zk = std::make_unique<zkr::test::zk_cluster>(co);
        lonely = zk->leader() == 0 ? 1 : 0;
    }
    zkr::client_options options(std::chrono::milliseconds session) const {
        auto o = zkr::test::test_options(zk->connect_string(lonely), session);
        o.can_be_read_only = true;
        return o;
    }
    void cut_off() { lab.isolate(servers[static_cast<std::size_t>(lonely)]); }
};
}  // namespace

TEST_CASE("partition 4: a read-only server cut off from the quorum serves reads, writes and acquires fail clearly") {
    read_only_setup setup;
    auto& zk = *setup.zk;
    const int lonely = setup.lonely;
    const auto path = zkr::test::recipe_path("read-only");
    zkr::client c(setup.options(4s));
    zkr::test::state_recorder states(c);
    c.start();
    REQUIRE(c.block_until_connected(20s));
    c.create(path + "/config", "v1", {.create_parents = true});

    const auto cut_at = std::chrono::steady_clock::now();
    setup.cut_off();
    const bool read_only = states.wait_for(zkr::connection_state::read_only, 60s);
    std::string seen;
    for (auto st : states.states()) seen += std::string(zkr::to_string(st)) + " ";
    INFO("states: " << seen << "; the lonely server says: " << zk.four_letter(lonely, "srvr"));
    REQUIRE(read_only);
    const auto read_only_after = std::chrono::steady_clock::now() - cut_at;
    CHECK(c.get_data(path + "/config").data == "v1");  // reads work
    boost::system::error_code ec;
    const auto sent = zkr::detail::requests_sent(zkr::detail::connection_of(c));
    c.create(path + "/other", "x", {}, ec);
    INFO("create on the read-only server: " << ec.message());
    CHECK(ec == zkr::errc::not_read_only);  // writes fail, saying why
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(c)) == sent);  // refused before sending
    zkr::interprocess_mutex m(c, path + "/lock");
    try {
        (void)m.acquire(2s);
        FAIL_CHECK("a lock was granted on a read-only server");
    } catch (const zkr::error& e) {
        INFO("acquire on the read-only server: " << e.what());
        CHECK(e.code() == zkr::errc::not_read_only);
        CHECK_THAT(std::string(e.what()), zkr::test::contains("read-only"));
    }
    // At once: a read-only server answers a write's refusal ahead of the reads still in its
    // pipeline (the acquire's listing), a reply out of order on which the C client drops the
    // connection (ZRUNTIMEINCONSISTENCY for everything in flight). The connection refuses writes on
    // a read-only connection itself, so none is sent for the server to answer out of order.
    try {
        (void)m.try_lock();
        FAIL_CHECK("try_lock succeeded on a read-only server");
    } catch (const zkr::error& e) {
        INFO("try_lock on the read-only server: " << e.what());
        CHECK(e.code() == zkr::errc::not_read_only);
    }

    setup.lab.heal_all();
    const auto healed_at = std::chrono::steady_clock::now();
    REQUIRE(zkr::test::eventually([&] { return c.state() == zkr::connection_state::connected || c.state() == zkr::connection_state::reconnected; }, 60s));
    const auto back_after = std::chrono::steady_clock::now() - healed_at;
    REQUIRE(m.acquire(10s));  // granted again once the quorum is back
    const auto granted_after = std::chrono::steady_clock::now() - healed_at;
    m.release();
    c.remove(path + "/config");
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(c, path + "/lock") == 0; }, 10s));
    using ms = std::chrono::milliseconds;
    std::cout << "partition read-only: read_only " << std::chrono::duration_cast<ms>(read_only_after).count()
              << " ms after the cut; connected " << std::chrono::duration_cast<ms>(back_after).count()
              << " ms after the heal; next grant " << std::chrono::duration_cast<ms>(granted_after).count()
              << " ms after the heal; violations 0 (no lock granted while read-only), nodes leaked 0" << std::endl;
}

// The read-only orphan (the lock simulation found it, seed 322000973): a protected create whose
// reply was lost is retried on a read-only server, cut off before the quorum made the node. That
// server lacks the node, and refuses the create (not_read_only). The node on the quorum must not
// stay ahead of every waiter. The simulation's servers keep the session in read-only mode, as
// ZooKeeper did before 3.7; there the connection keeps the recovery pending on a read-only server
// and looks for the node on the next read-write connection. ZooKeeper 3.8 and 3.9 refuse a global
// session on a read-only server (ZOOKEEPER-3864): this test shows what a real server does, which
// is that the retried create meets the read-only server under a new session, and the first
// attempt's node goes with the old one.
TEST_CASE("partition 6: a create whose reply was lost, retried on a read-only server that lacks its node, leaves no node") {
    using namespace std::chrono_literals;
    read_only_setup setup;
    auto& zk = *setup.zk;
    const int lonely = setup.lonely;
    const int leader = zk.leader();
    REQUIRE(leader >= 0);
    const auto path = zkr::test::recipe_path("read-only-orphan");

    zkr::client observer(zkr::test::test_options(zk.connect_string(leader), 10s));
    observer.start();
    REQUIRE(observer.block_until_connected(20s));

    // Our client reaches each server through a proxy: the leader, and the lonely one (starved for
    // now).
    zkr::test::tcp_proxy proxy(zk.host(leader), zk.client_port(leader));
    zkr::test::tcp_proxy lonely_proxy(zk.host(lonely), zk.client_port(lonely));
    lonely_proxy.blackhole(true);
    auto o = zkr::test::test_options("127.0.0.1:" + std::to_string(proxy.port()) + ",127.0.0.1:" + std::to_string(lonely_proxy.port()), 10s);
    o.can_be_read_only = true;
    o.retry_policy = std::make_shared<zkr::retry_until_elapsed>(30s, 100ms);  // the retry must meet the read-only server
    zkr::client c(o);
    zkr::test::state_recorder states(c);
    c.start();
    REQUIRE(c.block_until_connected(20s));
    REQUIRE(c.state() == zkr::connection_state::connected);
    const auto session = c.session_id();

    // The lonely follower is cut off from the quorum: it turns read-only, and never sees what the
    // quorum does from now on.
    setup.cut_off();
    REQUIRE(zkr::test::eventually([&] { return zk.four_letter(lonely, "srvr").find("read-only") != std::string::npos; }, 60s));

    // The create reaches the quorum; its reply (and the listing's behind it) are lost. (The lock's
    // node exists first: a missing parent would be made only after the create's reply, lost here.)
    observer.create(path, "", {.create_parents = true});
    proxy.drop_replies(true);
    zkr::interprocess_mutex m(c, path);
    auto outcome = std::async(std::launch::async, [&]() -> boost::system::error_code {
        try {
            if (m.acquire(20s)) {
                m.release();
                return {};
            }
            return boost::system::errc::make_error_code(boost::system::errc::timed_out);
        } catch (const zkr::error& e) {
            return e.code();
        }
    });
    REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(observer, path) == 1; }, 10s));

    // The leader goes out of reach, the lonely read-only server (which lacks the node) comes in.
    proxy.blackhole(true);
    proxy.reset_all();
    lonely_proxy.blackhole(false);
    REQUIRE(states.wait_for(zkr::connection_state::read_only, 30s));
    REQUIRE(outcome.wait_for(30s) == std::future_status::ready);
    const auto ec = outcome.get();
    INFO("the acquire on the read-only server: " << ec.message());
    REQUIRE(ec == zkr::errc::not_read_only);  // the retried create was refused on the read-only connection
    INFO("the node the first attempt made: " << zkr::test::nodes_under(observer, path) << " under " << path);

    // (Before 3.7 the session would be the same, and the connection would delete the node.)
    CHECK(c.session_id() != session);

    // The leader comes back in reach: the client leaves the read-only server.
    proxy.drop_replies(false);
    proxy.blackhole(false);
    const auto healed_at = std::chrono::steady_clock::now();
    REQUIRE(zkr::test::eventually([&] { return c.state() == zkr::connection_state::connected || c.state() == zkr::connection_state::reconnected; }, 30s));
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(observer, path) == 0; }, 15s));
    const auto gone_after = std::chrono::steady_clock::now() - healed_at;
    std::cout << "partition read-only orphan: new session on the read-only server (ZOOKEEPER-3864), no node left "
              << std::chrono::duration_cast<std::chrono::milliseconds>(gone_after).count() << " ms after the heal" << std::endl;
}

TEST_CASE("partition: leader election, 5 processes, the ZooKeeper leader cut off with its clients, and links flapping") {
    // The checker proves that no two terms with a proven (guarded) write overlapped, that epochs
    // rose and that every process led again. (A latch's listener hears terms, not hold states: the
    // doubt timing of the lock tests does not apply.)
    auto o = partition_run("latch");
    o.workers = 5;
    o.hold_ms = 500;  // terms of 500 ms: five take turns in the recovery (2.5 s ones took 17 s)
    fault_run r(o);
    std::vector<cut_hold> minority;
    r.for_fault_time([&] {
        if (r.random(0, 1) == 0) cut_leader_with_its_clients(r, minority);
        else flap(r, std::chrono::seconds(r.random(1, 3)));
    });
    r.finish("leader election under partitions");
}

TEST_CASE("partition 5: a random schedule of partitions and process faults, from a printed seed") {
    const int seed = announced_fault_seed("partition");
    fault_run r(partition_run(recipe_for(seed)));
    std::vector<cut_hold> minority, follower;
    std::vector<paused_hold> paused;
    r.for_fault_time([&] {
        switch (r.random(0, 7)) {
        case 0: cut_leader_with_its_clients(r, minority); break;
        case 1: cut_holders_follower(r, follower); break;
        case 2: bridge(r, std::chrono::seconds(r.random(1, 4))); break;
        case 3: flap(r, std::chrono::seconds(r.random(1, 4))); break;
        case 4: kill_leader(r); break;
        case 5: pause_server(r); break;
        case 6: pause_holder(r, paused); break;
        default: expire_random_session(r); break;
        }
    });
    const auto f = r.finish("partition random schedule");
    check_minority_holders(f, minority, r.session());
    check_follower_holders(f, follower);
    check_paused_holds(f, paused);
}

// Lock caching (mutex_options::cache_hold): each worker takes its kept node back with no request
// while nobody queues, and every hand-off to another worker waits for that worker's queueing to be
// heard. The same checker, with one worker's repeated token allowed (history.hpp, cached_holds);
// each run must have granted from the cache, or it proved nothing of it.
TEST_CASE("nemesis 8: lock caching under blackholes, resets and lost replies, standalone") {
    fault_run r({.servers = 1, .recipe = "mutex_cached", .workers = 2});
    r.for_fault_time([&] { network_fault(r); }, [&] { return r.grants_from_cache() > 0; });
    CHECK(r.finish("network").check.repeated_tokens > 0);
}

TEST_CASE("nemesis 8: lock caching while sessions expire at random, standalone") {
    fault_run r({.servers = 1, .recipe = "mutex_cached", .workers = 2});
    r.for_fault_time([&] { expire_random_session(r); }, [&] { return r.grants_from_cache() > 0; });
    CHECK(r.finish("expire sessions").check.repeated_tokens > 0);
}

TEST_CASE("nemesis 8: lock caching with a holder SIGSTOPped past its session timeout, standalone") {
    fault_run r({.servers = 1, .recipe = "mutex_cached", .workers = 2, .hold_ms = 100});
    std::vector<paused_hold> paused;
    r.for_fault_time([&] { pause_holder(r, paused); }, [&] { return !paused.empty() && r.grants_from_cache() > 0; });
    const auto f = r.finish("SIGSTOP holder");
    CHECK(check_paused_holds(f, paused) >= 1);
    CHECK(f.check.repeated_tokens > 0);
}
