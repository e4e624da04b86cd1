// Network namespaces for partition tests: each ZooKeeper server, and each group of client
// processes, in a namespace of its own, joined by veth links that a test cuts and heals.
//
// The test process itself moves into a private namespace of its own first (unshare), so the
// addresses and links it makes can clash with nothing else on the machine, not even a partition
// test running in parallel; the destructor moves it back. Every namespace is named
// "zkr-<pid>-<name>": the destructor deletes them (their links go with them), and namespaces left by
// a killed run (their pid is gone) are deleted when the next net_lab starts.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace zkr::test {

class net_lab {
public:
    /// The namespaces to make, e.g. {"s0", "s1", "s2", "minority", "majority"}. Throws
    /// std::runtime_error saying so when this machine cannot make them (not root, no iproute2).
    explicit net_lab(const std::vector<std::string>& names);
    ~net_lab();
    net_lab(const net_lab&) = delete;
    net_lab& operator=(const net_lab&) = delete;

    /// The name "host" stands for the test process's own (private) namespace.
    static constexpr const char* host = "host";

    /// A namespace's address (on its loopback; other namespaces reach it over their links).
    const std::string& address(const std::string& name) const;
    /// The file of a named namespace, for setns (/run/netns/zkr-<pid>-<name>).
    std::string netns_file(const std::string& name) const;
    /// argv prefixed so that it runs inside the namespace.
    std::vector<std::string> inside(const std::string& name, std::vector<std::string> argv) const;

    /// A veth link between two namespaces (or a namespace and host), with a route each way.
    void link(const std::string& a, const std::string& b);
    /// Every pair of the given names.
    void link_all(const std::vector<std::string>& names);

    /// Takes a link down (both ways at once) / brings it back with its routes.
    void cut(const std::string& a, const std::string& b);
    void heal(const std::string& a, const std::string& b);
    /// Cuts every link of `name` except its link to host (the harness still sees it).
    void isolate(const std::string& name);
    /// Heals every link that is cut.
    void heal_all();
    bool is_cut(const std::string& a, const std::string& b) const;
    /// The links, as pairs of names (host links included).
    std::vector<std::pair<std::string, std::string>> links() const;

private:
    struct end {
        std::string ns;      // a name of ours
        std::string device;  // the veth end in that namespace
    };
    struct link_info {
        end a, b;
        bool cut = false;
    };
    static std::pair<std::string, std::string> key(const std::string& a, const std::string& b);
    void route(const end& from, const std::string& to_name);
    void run_in(const std::string& name, const std::string& command) const;
    void tear_down() noexcept;

    std::string prefix_;
    std::vector<std::string> names_;
    std::map<std::string, std::string> addresses_;
    std::map<std::pair<std::string, std::string>, link_info> links_;
    int devices_ = 0;
    int original_ns_ = -1;
};

}  // namespace zkr::test
