// zkr elect: runs a command only while this process leads (a leader latch, Curator's LeaderLatch
// nodes), or with --observe prints the leader at every change.
#include "commands.hpp"
#include "supervise.hpp"

#include "election_view.hpp"

#include <zkr/leader_latch.hpp>
#include <zkr/path.hpp>

#include <pthread.h>

#include <atomic>
#include <future>
#include <iostream>
#include <thread>

namespace zkr::cli {

namespace {

using namespace std::chrono_literals;

// The observer's reads, on the client, each watch calling `mark`.
struct client_reads final : election_reads {
    zkr::client& client;
    std::function<void(const zkr::watch_event&)> mark;
    client_reads(zkr::client& c, std::function<void(const zkr::watch_event&)> m) : client(c), mark(std::move(m)) {}
    std::vector<std::string> list(const std::string& path, boost::system::error_code& ec) override {
        return client.get_children(path, mark, ec).children;
    }
    bool exists(const std::string& path, boost::system::error_code& ec) override {
        const auto s = client.exists(path, mark, ec);
        return !ec && s.has_value();
    }
    std::optional<node_data> read(const std::string& node) override {
        boost::system::error_code ec;
        const auto d = client.get_data(node, ec);
        if (ec) return std::nullopt;
        return node_data{d.data, d.stat.czxid};
    }
};

struct elect_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    std::string id;
    bool observe = false, json = false, lose_on_doubt = false;
    double lost_code = exit_lost, grace = 5;

    int run(const std::vector<std::string>& rest) override {
        const auto path = checked_path(paths, "elect");
        if (json && !observe) throw usage_error("--json goes with --observe");
        const sigset_t handled = handled_signals();
        ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);  // before the client's threads start
        if (observe) {
            if (!rest.empty()) throw usage_error("--observe runs no COMMAND (unexpected \"" + rest.front() + "\")");
            return observe_leader(path);
        }
        if (rest.empty()) throw usage_error("no COMMAND: give it after \"--\", as in: zkr elect " + path + " -- ./serve");
        return lead(path, rest);
    }

    int lead(const std::string& path, const std::vector<std::string>& rest) {
        auto client = connection.connect();
        zkr::leader_latch latch(*client, path, id, {.lose_on_doubt = lose_on_doubt});
        // Shared with the listener: a call already on the callback thread may outlive this function.
        const auto lost = std::make_shared<std::atomic<bool>>(false), leading = std::make_shared<std::atomic<bool>>(false),
                   doubted = std::make_shared<std::atomic<bool>>(false);
        auto subscription = latch.add_listener([lost, leading, doubted, c = client.get()](bool is_leader) {
            if (is_leader || !*leading) return;
            // With --lose-on-doubt a term ends while the session (and our node) may live on.
            *doubted = c->state() != zkr::connection_state::connected && c->state() != zkr::connection_state::reconnected;
            *lost = true;
        });
        latch.start();
        auto awaiting = std::async(std::launch::async, [&] {
            latch.await_leadership();
            *leading = true;
            return latch.fencing_token();
        });
        int interrupted = 0;
        std::int64_t epoch = 0;
        try {
            epoch = wait_interruptibly<std::int64_t>(awaiting, [&] { latch.close(); }, interrupted);
        } catch (const zkr::error& e) {
            if (interrupted) return 128 + interrupted;
            throw exit_error(e.code() == zkr::errc::lock_kind_mismatch ? exit_usage : exit_zookeeper, "electing on " + path + ": " + e.what());
        }
        if (interrupted) return 128 + interrupted;  // closed: the next participant leads
        held term{path, epoch, [&] {
                      *leading = false;  // our own close() ends the term: not a loss
                      latch.close();
                      return boost::system::error_code{};
                  }};
        supervision how{"zkr elect", "leadership of " + path, seconds_to_ms(grace), static_cast<int>(lost_code)};
        how.lost_reason = [&] {
            return *doubted ? "gave up leadership of " + path + ": the connection to ZooKeeper was suspended (--lose-on-doubt)"
                            : "lost leadership of " + path + " (session lost, or its node deleted)";
        };
        const int status = run_while_held(term, *lost, rest, how);
        if (*doubted) let_the_next_lead(*client, path, epoch);
        return status;
    }

    // After giving leadership up on doubt, our node may still head the queue: its delete waits for
    // the connection (a one-server blip of an ensemble is over in a moment), or it goes when the
    // session expires. Wait, up to the session timeout, for the first, so that the next
    // participant leads at once rather than after our session's expiry (issue 43: a 4.9 s gap).
    static void let_the_next_lead(zkr::client& c, const std::string& path, std::int64_t epoch) {
        const auto until = std::chrono::steady_clock::now() + c.negotiated_session_timeout();
        const auto left = [&] {
            return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()));
        };
        while (left() > 0ms && c.block_until_connected(left())) {
            boost::system::error_code ec;
            const auto children = c.get_children(path, ec).children;
            if (ec && ec != zkr::errc::no_node) break;
            bool ours_there = false;
            for (const auto& name : children) {
                const auto s = c.exists(zkr::join_path(path, name), ec);
                if (!ec && s && s->czxid == epoch) ours_there = true;
            }
            if (!ours_there) {
                std::cerr << "zkr elect: the connection came back: our node is deleted, the next participant leads\n";
                return;
            }
            std::this_thread::sleep_for(20ms);
        }
        std::cerr << "zkr elect: no connection within the session timeout: our node goes when the session expires\n";
    }

    // Prints the leader (the head of the latch queue, or of a LeaderSelector's mutex queue) at every
    // change, until a signal.
    int observe_leader(const std::string& path) {
        // Shared with the watches: one may fire (not_watching) while the client closes, after this
        // function's locals are gone.
        const auto changed = std::make_shared<std::atomic<bool>>(true);
        const auto mark = [changed](const zkr::watch_event&) { *changed = true; };
        auto client = connection.connect();
        std::string shown = "\n";  // nothing shown yet
        siginfo_t info{};
        client_reads reads{*client, mark};
        for (;;) {
            if (changed->exchange(false)) {
                election_seen seen;
                try {
                    seen = look_at_election(reads, path);
                } catch (const boost::system::system_error& e) {
                    throw exit_error(exit_zookeeper, std::string(e.what()));
                }
                if (seen.node != shown) {
                    shown = seen.node;
                    print(path, seen.leader, seen.node, seen.epoch, seen.participants);
                }
            }
            const int sig = next_signal(20ms, info);  // a watch's news is taken within 20 ms
            if (sig && sig != SIGCHLD) return 0;
        }
    }

    void print(const std::string& path, const std::string& leader, const std::string& node, std::int64_t epoch,
               std::size_t participants) const {
        if (json) {
            say_json({{"path", path},
                      {"leader", node.empty() ? cli::json(nullptr) : cli::json(leader)},
                      {"node", node.empty() ? cli::json(nullptr) : cli::json(node)},
                      {"epoch", epoch},
                      {"participants", participants}});
        } else if (node.empty()) {
            say(path + ": no leader");
        } else {
            say(path + ": leader " + (leader.empty() ? "-" : leader) + " (epoch " + std::to_string(epoch) + ", " +
                std::to_string(participants) + " participant" + (participants == 1 ? "" : "s") + ")");
        }
    }
};

}  // namespace

std::unique_ptr<command> add_elect_command(CLI::App& app) {
    auto cmd = std::make_unique<elect_command>();
    auto* sub = app.add_subcommand("elect", "run a command only while this process leads; or watch who leads");
    sub->add_option("PATH", cmd->paths, "the election's path")->type_name("");
    sub->add_option("--id", cmd->id, "what this participant's node holds, shown as the leader (default host:pid)")->type_name("ID");
    sub->add_flag("--lose-on-doubt", cmd->lose_on_doubt,
                  "end the term (stop COMMAND) as soon as the connection is suspended, not only when the session is lost");
    add_supervision_options(*sub, cmd->grace, cmd->lost_code, "leadership");
    sub->add_flag("--observe", cmd->observe, "print the leader at every change; run no COMMAND");
    sub->add_flag("--json", cmd->json, "with --observe: one JSON object per line");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Joins the leader election PATH (Curator's LeaderLatch nodes, so Java and C++ processes elect one\n"
        "leader between them) and runs COMMAND once this process leads; exits with COMMAND's status and\n"
        "leaves the election, and the next participant leads. With --observe, prints the leader at every\n"
        "change instead (until a signal)." "\n\n"
        "COMMAND gets ZKR_LOCK_PATH (PATH) and ZKR_FENCING_TOKEN (the term's epoch: it rises with every\n"
        "new leader). COMMAND runs in a process group of its own, stopped as zkr lock stops it (SIGTERM,\n"
        "then SIGKILL after --grace) when leadership is lost, and when zkr itself dies, even by SIGKILL.\n\n"
        "exit codes: COMMAND's status; 2 bad usage; 3 ZooKeeper unreachable or failing; 4 leadership was\n"
        "lost and COMMAND was stopped; 126 COMMAND cannot run; 127 not found; 128+N a signal N ended the wait.");
    return cmd;
}

}  // namespace zkr::cli
