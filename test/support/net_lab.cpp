#include "net_lab.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace zkr::test {
namespace fs = std::filesystem;

namespace {

constexpr const char* ip_tool = "/usr/sbin/ip";
constexpr const char* netns_dir = "/run/netns";

// Runs an ip(8) command line; its output goes to a string for the error message.
int run_ip(const std::string& args, std::string& output) {
    const std::string command = std::string(ip_tool) + " " + args + " 2>&1";
    output.clear();
    FILE* p = ::popen(command.c_str(), "r");
    if (!p) return -1;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) output += buf;
    const int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ip(const std::string& args) {
    std::string out;
    if (run_ip(args, out) != 0) throw std::runtime_error("ip " + args + " failed: " + out);
}

// Namespaces of earlier runs whose process is gone (killed before its destructors ran).
void sweep_stale_namespaces() {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(netns_dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("zkr-", 0) != 0) continue;
        const int pid = std::atoi(name.c_str() + 4);
        if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
            std::string out;
            run_ip("netns del " + name, out);
        }
    }
}

}  // namespace

net_lab::net_lab(const std::vector<std::string>& names) : prefix_("zkr-" + std::to_string(::getpid()) + "-"), names_(names) {
    const std::string cannot = "this machine cannot make network namespaces for the partition tests: ";
    if (::geteuid() != 0) throw std::runtime_error(cannot + "they need root (run the suite as root, as CI does)");
    if (::access(ip_tool, X_OK) != 0) throw std::runtime_error(cannot + std::string(ip_tool) + " is missing (install iproute2)");
    sweep_stale_namespaces();
    original_ns_ = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (original_ns_ < 0) throw std::runtime_error(cannot + "cannot open /proc/self/ns/net: " + std::strerror(errno));
    // This thread (and every thread and process it starts from now on) gets a namespace of its own.
    if (::unshare(CLONE_NEWNET) != 0) throw std::runtime_error(cannot + "unshare(CLONE_NEWNET): " + std::strerror(errno));
    try {
        addresses_[host] = "10.77.0.254";
        ip("link set lo up");
        ip("addr add 10.77.0.254/32 dev lo");
        int index = 1;
        for (const auto& n : names_) {
            if (n == host || addresses_.count(n)) throw std::invalid_argument("net_lab: name \"" + n + "\" is taken");
            const std::string full = prefix_ + n;
            ip("netns add " + full);
            addresses_[n] = "10.77.0." + std::to_string(index++);
            ip("-n " + full + " link set lo up");
            ip("-n " + full + " addr add " + addresses_[n] + "/32 dev lo");
        }
    } catch (const std::runtime_error& e) {
        tear_down();
        throw std::runtime_error(cannot + e.what());
    }
}

net_lab::~net_lab() { tear_down(); }

void net_lab::tear_down() noexcept {
    for (const auto& n : names_) {
        std::string out;
        run_ip("netns del " + prefix_ + n, out);  // its links go with it
    }
    names_.clear();
    if (original_ns_ >= 0) {
        ::setns(original_ns_, CLONE_NEWNET);
        ::close(original_ns_);
        original_ns_ = -1;
    }
}

const std::string& net_lab::address(const std::string& name) const {
    auto it = addresses_.find(name);
    if (it == addresses_.end()) throw std::invalid_argument("net_lab: no namespace \"" + name + "\"");
    return it->second;
}

std::string net_lab::netns_file(const std::string& name) const {
    (void)address(name);
    if (name == host) throw std::invalid_argument("net_lab: host has no namespace file");
    return std::string(netns_dir) + "/" + prefix_ + name;
}

std::vector<std::string> net_lab::inside(const std::string& name, std::vector<std::string> argv) const {
    if (name == host) return argv;
    std::vector<std::string> out = {ip_tool, "netns", "exec", prefix_ + name};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

std::pair<std::string, std::string> net_lab::key(const std::string& a, const std::string& b) {
    return a < b ? std::pair{a, b} : std::pair{b, a};
}

void net_lab::run_in(const std::string& name, const std::string& command) const {
    ip(name == host ? command : "-n " + prefix_ + name + " " + command);
}

// A /32 route to the other end's address through this end's device, from our own address: the
// devices have no addresses of their own, and each namespace answers ARP for its loopback address.
void net_lab::route(const end& from, const std::string& to_name) {
    run_in(from.ns, "route replace " + address(to_name) + "/32 dev " + from.device + " src " + address(from.ns));
}

void net_lab::link(const std::string& a, const std::string& b) {
    (void)address(a);
    (void)address(b);
    if (a == b || links_.count(key(a, b))) throw std::invalid_argument("net_lab: cannot link " + a + " and " + b);
    const int n = devices_++;
    std::string device("v");
    device += std::to_string(n);
    link_info l{{a, device}, {b, device}};
    l.a.device += 'a';
    l.b.device += 'b';
    auto where = [&](const std::string& ns) { return ns == host ? std::string() : " netns " + prefix_ + ns; };
    ip("link add " + l.a.device + where(a) + " type veth peer name " + l.b.device + where(b));
    for (const end* e : {&l.a, &l.b}) run_in(e->ns, "link set " + e->device + " up");
    route(l.a, b);
    route(l.b, a);
    links_[key(a, b)] = l;
}

void net_lab::link_all(const std::vector<std::string>& names) {
    for (std::size_t i = 0; i < names.size(); ++i)
        for (std::size_t j = i + 1; j < names.size(); ++j) link(names[i], names[j]);
}

void net_lab::cut(const std::string& a, const std::string& b) {
    auto it = links_.find(key(a, b));
    if (it == links_.end()) throw std::invalid_argument("net_lab: no link between " + a + " and " + b);
    if (it->second.cut) return;
    // Down at one end: the other loses its carrier, so nothing passes either way.
    run_in(it->second.a.ns, "link set " + it->second.a.device + " down");
    it->second.cut = true;
}

void net_lab::heal(const std::string& a, const std::string& b) {
    auto it = links_.find(key(a, b));
    if (it == links_.end()) throw std::invalid_argument("net_lab: no link between " + a + " and " + b);
    if (!it->second.cut) return;
    auto& l = it->second;
    run_in(l.a.ns, "link set " + l.a.device + " up");
    // Taking a device down removed its routes.
    route(l.a, l.b.ns);
    route(l.b, l.a.ns);
    l.cut = false;
}

void net_lab::isolate(const std::string& name) {
    for (auto& [k, l] : links_)
        if ((k.first == name || k.second == name) && k.first != host && k.second != host) cut(k.first, k.second);
}

void net_lab::heal_all() {
    for (auto& [k, l] : links_)
        if (l.cut) heal(k.first, k.second);
}

bool net_lab::is_cut(const std::string& a, const std::string& b) const {
    auto it = links_.find(key(a, b));
    return it != links_.end() && it->second.cut;
}

std::vector<std::pair<std::string, std::string>> net_lab::links() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, l] : links_) out.push_back(k);
    return out;
}

}  // namespace zkr::test
