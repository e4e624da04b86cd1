#include "embedded_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace zkr::cli {

namespace {

constexpr const char* java = "/usr/bin/java";
constexpr const char* server_jar = "/usr/share/java/zookeeper.jar";

int free_port() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        if (s >= 0) ::close(s);
        throw std::runtime_error("cannot find a free loopback port");
    }
    ::close(s);
    return ntohs(a.sin_port);
}

// True when the server answers the "srvr" four-letter command with its mode.
bool serving(int port) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{1, 0};
    ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string reply;
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::write(s, "srvr", 4) == 4) {
        char buf[512];
        for (ssize_t n; (n = ::read(s, buf, sizeof buf)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
    }
    ::close(s);
    return reply.find("Mode: ") != std::string::npos;
}

}  // namespace

embedded_server::embedded_server() {
    if (::access(java, X_OK) != 0 || ::access(server_jar, R_OK) != 0)
        throw std::runtime_error(std::string("no ZooKeeper server to start: ") + java + " and " + server_jar +
                                 " are needed (Debian packages default-jre-headless and zookeeper), or give --connect");
    char tmpl[] = "/tmp/zkr-demo-zookeeper-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("cannot create a temporary directory");
    dir_ = tmpl;
    const int port = free_port();
    connect_ = "127.0.0.1:" + std::to_string(port);
    {
        std::ofstream cfg(dir_ + "/zoo.cfg");
        cfg << "tickTime=500\ndataDir=" << dir_ << "/data\nclientPort=" << port
            << "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=no\n";
    }
    std::vector<std::string> args = {java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                     "-cp", std::string("/etc/zookeeper/conf:") + server_jar,
                                     "org.apache.zookeeper.server.ZooKeeperServerMain", dir_ + "/zoo.cfg"};
    const std::string log = dir_ + "/server.log";
    // Made before the fork: after fork() the child may only make async-signal-safe calls.
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the server never outlives us
        if (::getppid() != parent) ::_exit(1);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
        }
        ::setpgid(0, 0);  // a Ctrl-C at the terminal is ours to handle, not the server's
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!serving(port)) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("the ZooKeeper server exited at start; see " + log);
        }
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
            throw std::runtime_error("the ZooKeeper server did not start within 60 s; see " + log);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

embedded_server::~embedded_server() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

}  // namespace zkr::cli
