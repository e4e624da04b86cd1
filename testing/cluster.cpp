// A throwaway ZooKeeper: standalone servers and ensembles started from Debian's zookeeper.jar.
#include <zkr/testing.hpp>

#include <algorithm>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <mutex>
#include <stdexcept>

namespace zkr::testing {
namespace fs = std::filesystem;

namespace {

constexpr const char* java = "/usr/bin/java";
constexpr const char* server_jar = "/usr/share/java/zookeeper.jar";
constexpr const char* classpath = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar";
constexpr const char* server_log_binding = "/usr/share/java/slf4j-simple.jar";
constexpr const char* dir_prefix = "zkr-test-";

/// argv for execv: pointers into args (which must outlive them), null-terminated.
std::vector<char*> c_argv(std::vector<std::string>& args) {
    std::vector<char*> out;
    for (auto& a : args) out.push_back(a.data());
    out.push_back(nullptr);
    return out;
}

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

struct cluster::server_process {
    int id = 0;
    int client_port = 0;
    int peer_port = 0;
    int election_port = 0;
    std::string dir;
    pid_t pid = -1;
};

cluster::cluster(cluster_options options) : options_(std::move(options)) {
    if (options_.servers < 1)
        throw std::invalid_argument("zkr::testing::cluster: servers must be at least 1, not " + std::to_string(options_.servers));
    if (::access(java, X_OK) != 0 || ::access(server_jar, R_OK) != 0)
        throw std::runtime_error(std::string("zkr::testing::cluster: no ZooKeeper server to start: ") + java + " and " +
                                 server_jar + " are needed (Debian packages default-jre-headless and zookeeper)");
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

cluster::~cluster() {
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

void cluster::write_config(server_process& s) {
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

std::string cluster::connect_string() const {
    std::string out;
    for (int i = 0; i < size(); ++i) {
        if (i) out += ',';
        out += connect_string(i);
    }
    return out;
}

std::string cluster::connect_string(int i) const { return host(i) + ":" + std::to_string(client_port(i)); }

std::string cluster::host(int i) const {
    const auto n = static_cast<std::size_t>(i);
    return n < options_.hosts.size() ? options_.hosts[n] : "127.0.0.1";
}
int cluster::client_port(int i) const { return servers_.at(static_cast<std::size_t>(i))->client_port; }

void cluster::start_all() {
    for (int i = 0; i < size(); ++i) start(i, false);
    for (int i = 0; i < size(); ++i) await_serving(i);
}

void cluster::await_serving(int i) {
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

void cluster::start(int i, bool wait) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid > 0) return;
    const std::string cfg = s.dir + "/zoo.cfg";
    const std::string log = s.dir + "/server.log";
    const std::string container = "-Dznode.container.checkIntervalMs=" + std::to_string(options_.container_check_ms);
    std::vector<std::string> args = {java, "-Xmx256m", "-XX:+UseSerialGC", "-Xshare:auto",
                                     "-Dzookeeper.extendedTypesEnabled=true", "-Dzookeeper.admin.enableServer=false",
                                     container, "-cp", classpath};
    // Kept directories are for reading the servers' logs: give them a logger (slf4j-simple, to
    // the log file), or the server's slf4j falls back to logging nothing.
    if (std::getenv("ZKR_FAULT_KEEP") && ::access(server_log_binding, R_OK) == 0) {
        args.back() = std::string(classpath) + ":" + server_log_binding;
        args.insert(args.end() - 2, {"-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"});
    }
    if (options_.fast_jvm_start) args.insert(args.begin() + 1, "-XX:TieredStopAtLevel=1");
    // After zkr's own properties: the JVM takes the last of a name, so a test can turn one off.
    args.insert(std::find(args.begin(), args.end(), std::string("-cp")), options_.jvm_properties.begin(), options_.jvm_properties.end());
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
        // A signal the caller blocks (to wait for it with sigwait, say) must still stop the server.
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        // A Ctrl-C at the terminal is the caller's to handle, not the server's.
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

void cluster::stop(int i) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid <= 0) return;
    ::kill(s.pid, SIGCONT);
    ::kill(s.pid, SIGTERM);
    ::waitpid(s.pid, nullptr, 0);
    s.pid = -1;
}

void cluster::kill(int i) {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    if (s.pid <= 0) return;
    ::kill(s.pid, SIGKILL);
    ::waitpid(s.pid, nullptr, 0);
    s.pid = -1;
}

void cluster::pause(int i) {
    if (const pid_t p = servers_.at(static_cast<std::size_t>(i))->pid; p > 0) ::kill(p, SIGSTOP);
}

void cluster::resume(int i) {
    if (const pid_t p = servers_.at(static_cast<std::size_t>(i))->pid; p > 0) ::kill(p, SIGCONT);
}

bool cluster::running(int i) const {
    auto& s = *servers_.at(static_cast<std::size_t>(i));
    // A server that exited by itself (it could not bind its port, say) is reaped here.
    if (s.pid > 0 && ::waitpid(s.pid, nullptr, WNOHANG) == s.pid) s.pid = -1;
    return s.pid > 0;
}

std::string cluster::four_letter(int i, const std::string& cmd) const {
    return send_four_letter(client_port(i), cmd, std::chrono::milliseconds(1000), host(i));
}

bool cluster::serving(int i) const { return four_letter(i, "srvr").find("Mode: ") != std::string::npos; }

bool cluster::wait_serving(int i, std::chrono::milliseconds timeout) const {
    bool exited = false;
    const bool up = eventually(
        [&] {
            exited = !running(i);
            return exited || serving(i);
        },
        timeout);
    return up && !exited;
}

int cluster::leader() const {
    for (int i = 0; i < size(); ++i)
        if (running(i) && four_letter(i, "srvr").find("Mode: leader") != std::string::npos) return i;
    return -1;
}

int cluster::server_of_session(std::int64_t session_id) const {
    char hex[32];
    std::snprintf(hex, sizeof hex, "sid=0x%llx", static_cast<unsigned long long>(session_id));
    for (int i = 0; i < size(); ++i)
        if (running(i) && four_letter(i, "cons").find(hex) != std::string::npos) return i;
    return -1;
}

}  // namespace zkr::testing
