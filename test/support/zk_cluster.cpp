#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "zk_cluster.hpp"

#include "process.hpp"
#include "shared_server.hpp"

#include <zkr/error.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <zookeeper/zookeeper.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace zkr::test {
namespace fs = std::filesystem;

namespace {

constexpr const char* classpath = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar";
constexpr const char* dir_prefix = "zkr-test-";

// A port outside the kernel's ephemeral range, free when we look. Not a bind(0) port: a client
// reconnecting to a stopped server's ephemeral-range port can be given that very port as its own
// local port and connect to itself (TCP simultaneous open), and the restarted server then cannot
// bind. A CI run failed that way.
}  // namespace

int free_loopback_port() {
    static std::mutex m;
    static std::set<int> handed_out;  // a cluster asks for several ports before any server binds
    static std::mt19937 rng(static_cast<unsigned>(::getpid()) ^
                            static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    int ephemeral_low = 32768;
    if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> ephemeral_low;
    const int low = 10000;
    const int high = std::max(low + 1000, ephemeral_low) - 1;
    std::uniform_int_distribution<int> pick(low, high);
    std::lock_guard lock(m);
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const int port = pick(rng);
        if (handed_out.count(port)) continue;
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (free) {
            handed_out.insert(port);
            return port;
        }
    }
    throw std::runtime_error("no free loopback port below the ephemeral range");
}

namespace {

// Directories of test runs whose process is gone (killed before its destructors ran).
void sweep_stale_dirs() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(dir_prefix, 0) != 0) continue;
        const int pid = std::atoi(name.c_str() + std::strlen(dir_prefix));
        // Directories only: the fault suite keeps its histories (files) on purpose.
        if (pid > 0 && e.is_directory(ec) && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
    }
}

}  // namespace

std::string send_four_letter(int port, const std::string& cmd, std::chrono::milliseconds timeout, const std::string& host) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto remaining = [&] {
        return static_cast<int>(std::max<std::int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count()));
    };
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return out;
    }
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining()) <= 0 || (p.revents & (POLLERR | POLLHUP))) {
        ::close(fd);
        return out;
    }
    if (::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
        ::close(fd);
        return out;
    }
    char buf[4096];
    for (;;) {
        p = {fd, POLLIN, 0};
        if (::poll(&p, 1, remaining()) <= 0) break;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

namespace {

// PR_SET_PDEATHSIG fires when the thread that forked exits, not the process: fork every server
// from one thread that lives as long as the process, so a server started from a short-lived test
// thread is not killed with it.
pid_t spawn(const std::function<pid_t()>& fork_and_exec) {
    struct spawner {
        std::mutex m;
        std::condition_variable cv;
        std::deque<std::pair<std::function<pid_t()>, std::promise<pid_t>*>> jobs;
        spawner() {
            std::thread([this] {
                for (;;) {
                    std::unique_lock lock(m);
                    cv.wait(lock, [&] { return !jobs.empty(); });
                    auto job = std::move(jobs.front());
                    jobs.pop_front();
                    lock.unlock();
                    job.second->set_value(job.first());
                }
            }).detach();
        }
    };
    static auto* s = new spawner;  // never destroyed: its thread runs until the process ends
    std::promise<pid_t> result;
    {
        std::lock_guard lock(s->m);
        s->jobs.emplace_back(fork_and_exec, &result);
    }
    s->cv.notify_one();
    return result.get_future().get();
}

}  // namespace

struct zk_cluster::server_process {
    int id = 0;
    int client_port = 0;
    int peer_port = 0;
    int election_port = 0;
    std::string dir;
    pid_t pid = -1;
};

zk_cluster::zk_cluster(cluster_options options) : options_(options) {
    sweep_stale_dirs();
    std::string templ = (fs::temp_directory_path() / (std::string(dir_prefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = templ;
    for (int i = 0; i < options_.servers; ++i) {
        auto s = std::make_unique<server_process>();
        s->id = i + 1;
        s->client_port = free_loopback_port();
        s->peer_port = free_loopback_port();
        s->election_port = free_loopback_port();
        s->dir = dir_ + "/server" + std::to_string(s->id);
        fs::create_directories(s->dir + "/data");
        servers_.push_back(std::move(s));
    }
    for (auto& s : servers_) write_config(*s);
    start_all();
}

zk_cluster::~zk_cluster() {
    for (int i = 0; i < size(); ++i) {
        if (servers_[i]->pid > 0) {
            ::kill(servers_[i]->pid, SIGCONT);
            ::kill(servers_[i]->pid, SIGKILL);
            ::waitpid(servers_[i]->pid, nullptr, 0);
        }
    }
    // Kept, with the fault suite's histories, for a look at the servers' logs.
    if (std::getenv("ZKR_FAULT_KEEP")) {
        std::cerr << "servers' directory kept: " << dir_ << std::endl;
        return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

void zk_cluster::write_config(server_process& s) {
    std::ofstream cfg(s.dir + "/zoo.cfg");
    cfg << "tickTime=" << options_.tick_ms << "\n"
        << "initLimit=20\nsyncLimit=10\n"
        << "dataDir=" << s.dir << "/data\n"
        << "clientPort=" << s.client_port << "\n"
        << "clientPortAddress=" << host(s.id - 1) << "\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n"
        << "forceSync=" << (options_.force_sync ? "yes" : "no") << "\n"
        << "minSessionTimeout=" << options_.min_session_ms << "\n"
        << "maxSessionTimeout=" << options_.max_session_ms << "\n"
        << "maxClientCnxns=0\n";
    for (const auto& line : options_.config_lines) cfg << line << "\n";
    if (size() > 1) {
        for (const auto& o : servers_)
            cfg << "server." << o->id << "=" << host(o->id - 1) << ":" << o->peer_port << ":" << o->election_port << "\n";
        std::ofstream(s.dir + "/data/myid") << s.id << "\n";
    }
}

std::string zk_cluster::connect_string() const {
    std::string out;
    for (int i = 0; i < size(); ++i) {
        if (i) out += ',';
        out += connect_string(i);
    }
    return out;
}

std::string zk_cluster::connect_string(int i) const { return host(i) + ":" + std::to_string(client_port(i)); }

std::string zk_cluster::host(int i) const {
    const auto n = static_cast<std::size_t>(i);
    return n < options_.hosts.size() ? options_.hosts[n] : "127.0.0.1";
}
int zk_cluster::client_port(int i) const { return servers_.at(static_cast<std::size_t>(i))->client_port; }

void zk_cluster::start_all() {
    for (int i = 0; i < size(); ++i) start(i, false);
    for (int i = 0; i < size(); ++i) await_serving(i);
}

void zk_cluster::await_serving(int i) {
    for (int attempt = 1;; ++attempt) {
        if (wait_serving(i, std::chrono::seconds(60))) return;
        if (running(i) || attempt == 3) {
            // The directory goes with the cluster: carry the log's end in the message.
            const std::string log = servers_[static_cast<std::size_t>(i)]->dir + "/server.log";
            std::ifstream in(log);
            std::deque<std::string> tail;
            for (std::string line; std::getline(in, line);) {
                tail.push_back(std::move(line));
                if (tail.size() > 40) tail.pop_front();
            }
            std::string msg = "ZooKeeper server " + std::to_string(i) + " did not start (" +
                              (running(i) ? "still running, not serving" : "it exited") + "); the end of " + log + ":";
            for (const auto& l : tail) msg += "\n  " + l;
            throw std::runtime_error(msg);
        }
        // It exited by itself: its port was busy for a moment (another process's connection). Again.
        std::this_thread::sleep_for(std::chrono::seconds(1));
        start(i, false);
    }
}

void zk_cluster::start(int i, bool wait) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid > 0) return;
    const std::string cfg = s.dir + "/zoo.cfg";
    const std::string log = s.dir + "/server.log";
    const std::string container = "-Dznode.container.checkIntervalMs=" + std::to_string(options_.container_check_ms);
    std::vector<std::string> args = {"/usr/bin/java", "-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto",
                                     "-Dzookeeper.extendedTypesEnabled=true", "-Dzookeeper.admin.enableServer=false",
                                     container, "-cp", classpath};
    if (options_.fast_jvm_start) args.insert(args.begin() + 1, "-XX:TieredStopAtLevel=1");
    args.insert(args.begin() + 1, options_.jvm_properties.begin(), options_.jvm_properties.end());
    args.push_back(size() > 1 ? "org.apache.zookeeper.server.quorum.QuorumPeerMain"
                              : "org.apache.zookeeper.server.ZooKeeperServerMain");
    args.push_back(cfg);
    // Everything the child needs is made before the fork: after fork() in a threaded process the
    // child may only make async-signal-safe calls. A malloc there can wait for ever on a lock that
    // another thread held at the fork (seen under AddressSanitizer: a "server" that never started).
    auto argv = c_argv(args);
    const char* log_path = log.c_str();
    const pid_t parent = ::getpid();
    // Opened before the fork: the child only joins it (setns is a plain system call).
    int netns_fd = -1;
    if (static_cast<std::size_t>(i) < options_.netns_files.size()) {
        netns_fd = ::open(options_.netns_files[static_cast<std::size_t>(i)].c_str(), O_RDONLY | O_CLOEXEC);
        if (netns_fd < 0) throw std::runtime_error("cannot open " + options_.netns_files[static_cast<std::size_t>(i)]);
    }
    const pid_t pid = spawn([&] {
    const pid_t child = ::fork();
    if (child == 0) {
        // The server dies with the test process, however that ends.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(1);
        const int fd = ::open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        ::setpgid(0, 0);
        if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(126);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return child;
    });
    if (netns_fd >= 0) ::close(netns_fd);
    if (pid < 0) throw std::runtime_error("fork failed");
    s.pid = pid;
    if (wait) await_serving(i);
}

void zk_cluster::stop(int i) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid <= 0) return;
    ::kill(s.pid, SIGCONT);
    ::kill(s.pid, SIGTERM);
    ::waitpid(s.pid, nullptr, 0);
    s.pid = -1;
}

void zk_cluster::kill(int i) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid <= 0) return;
    ::kill(s.pid, SIGKILL);
    ::waitpid(s.pid, nullptr, 0);
    s.pid = -1;
}

void zk_cluster::pause(int i) {
    if (const pid_t p = servers_.at(static_cast<std::size_t>(i))->pid; p > 0) ::kill(p, SIGSTOP);
}

void zk_cluster::resume(int i) {
    if (const pid_t p = servers_.at(static_cast<std::size_t>(i))->pid; p > 0) ::kill(p, SIGCONT);
}

bool zk_cluster::running(int i) const {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    // A server that exited by itself (it could not bind its port, say) is reaped here.
    if (s.pid > 0 && ::waitpid(s.pid, nullptr, WNOHANG) == s.pid) s.pid = -1;
    return s.pid > 0;
}

std::string zk_cluster::four_letter(int i, const std::string& cmd) const {
    return send_four_letter(client_port(i), cmd, std::chrono::milliseconds(1000), host(i));
}

bool zk_cluster::serving(int i) const { return four_letter(i, "srvr").find("Mode: ") != std::string::npos; }

bool zk_cluster::wait_serving(int i, std::chrono::milliseconds timeout) const {
    bool exited = false;
    const bool up = eventually(
        [&] {
            exited = !running(i);
            return exited || serving(i);
        },
        timeout);
    return up && !exited;
}

int zk_cluster::leader() const {
    for (int i = 0; i < size(); ++i)
        if (running(i) && four_letter(i, "srvr").find("Mode: leader") != std::string::npos) return i;
    return -1;
}

int zk_cluster::server_of_session(std::int64_t session_id) const {
    char hex[32];
    std::snprintf(hex, sizeof hex, "sid=0x%llx", static_cast<unsigned long long>(session_id));
    for (int i = 0; i < size(); ++i)
        if (running(i) && four_letter(i, "cons").find(hex) != std::string::npos) return i;
    return -1;
}

namespace {
// Opens a second handle on the session and drives it until the server has answered: connected
// (the session is now this handle's) or expired (it is gone). Closes the handle, and returns its
// state at the answer (anything else: no answer in 20 s).
int take_over_session(const std::string& connect_string, std::int64_t session_id, const std::string& password) {
    clientid_t id{};
    id.client_id = session_id;
    std::memcpy(id.passwd, password.data(), std::min(password.size(), sizeof id.passwd));
    zhandle_t* zh = zookeeper_init(connect_string.c_str(), nullptr, 10000, &id, nullptr, ZOO_NO_LOG_CLIENTENV);
    if (!zh) throw std::runtime_error("expire_session: zookeeper_init failed");
    // Drive the single-threaded handle until it has taken the session over.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (zoo_state(zh) != ZOO_CONNECTED_STATE && zoo_state(zh) != ZOO_EXPIRED_SESSION_STATE &&
           std::chrono::steady_clock::now() < deadline) {
        int fd = -1, interest = 0;
        timeval tv{};
        zookeeper_interest(zh, &fd, &interest, &tv);
        pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)), 0};
        const int ms = std::min<int>(100, static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000));
        const int n = fd >= 0 ? ::poll(&p, 1, ms) : (std::this_thread::sleep_for(std::chrono::milliseconds(ms)), 0);
        int events = 0;
        if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) events |= ZOOKEEPER_READ;
        if (n > 0 && (p.revents & POLLOUT)) events |= ZOOKEEPER_WRITE;
        zookeeper_process(zh, events);
    }
    const int state = zoo_state(zh);
    zookeeper_close(zh);
    return state;
}
}  // namespace

void expire_session(const std::string& connect_string, std::int64_t session_id, const std::string& password) {
    // Holding the C client's process-wide lock also freezes this process's own clients meanwhile
    // (like a short pause), so the client under test cannot take its session back before it is
    // closed.
    const std::lock_guard lock(zkr::detail::c_client_mutex());
    // The single-threaded close only sends its request and hangs up: it was seen (ZooKeeper 3.9,
    // under load) to leave the session alive, and its owner then took it back and held on. So
    // take it over again until the server answers that it is gone.
    for (int attempt = 0; attempt < 10; ++attempt) {
        const int state = take_over_session(connect_string, session_id, password);
        if (state == ZOO_EXPIRED_SESSION_STATE) return;
        if (state != ZOO_CONNECTED_STATE) break;
    }
    throw std::runtime_error("expire_session: could not end the session");
}

void expire_session(const std::string& connect_string, zkr::client& c) {
    // The client reconnects within milliseconds and may take its session back before the second
    // handle's close arrives (the server then refuses that close: session moved). Repeat until the
    // session is really gone.
    auto [id, password] = zkr::detail::session_credentials(zkr::detail::connection_of(c));
    for (int attempt = 0; attempt < 20; ++attempt) {
        expire_session(connect_string, id, password);
        if (eventually([&, old = id] { return c.session_id() != old || c.state() == connection_state::lost; },
                       std::chrono::milliseconds(1500)))
            return;
    }
    throw std::runtime_error("expire_session: the session survived 20 attempts");
}

client_options test_options(const std::string& connect_string, std::chrono::milliseconds session_timeout) {
    client_options o;
    o.connect_string = connect_string;
    o.session_timeout = session_timeout;
    o.connection_timeout = std::chrono::seconds(5);
    o.retry_policy = std::make_shared<zkr::exponential_backoff_retry>(std::chrono::milliseconds(50), 5,
                                                                      std::chrono::milliseconds(500));
    static const std::shared_ptr<spdlog::logger> logger = [] {
        auto l = spdlog::stderr_color_mt("zkr-test");
        const char* level = std::getenv("ZKR_TEST_LOG");
        // Quiet by default: the C client logs every refused reconnection attempt as an error.
        l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::off);
        return l;
    }();
    o.logger = logger;
    return o;
}

struct state_recorder::shared {
    mutable std::mutex m;
    mutable std::condition_variable cv;
    std::vector<connection_state> states;
};

state_recorder::state_recorder(zkr::client& c) : shared_(std::make_shared<shared>()) {
    subscription_ = c.add_state_listener([s = shared_](connection_state st) {
        std::lock_guard lock(s->m);
        s->states.push_back(st);
        s->cv.notify_all();
    });
}

std::vector<connection_state> state_recorder::states() const {
    std::lock_guard lock(shared_->m);
    return shared_->states;
}

bool state_recorder::wait_for(connection_state s, std::chrono::milliseconds timeout) const {
    return wait_count(s, 1, timeout);
}

bool state_recorder::wait_count(connection_state s, int n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(shared_->m);
    return shared_->cv.wait_for(lock, timeout, [&] {
        return std::count(shared_->states.begin(), shared_->states.end(), s) >= n;
    });
}

void state_recorder::clear() {
    std::lock_guard lock(shared_->m);
    shared_->states.clear();
}

}  // namespace zkr::test

namespace zkr::test {
int thread_count() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}
}  // namespace zkr::test
