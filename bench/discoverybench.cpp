// Service discovery from the cached view, zkr's service_provider beside Curator 5.4's
// ServiceProvider (bench/peers/CuratorDiscoveryBench.java), each in a process of its own:
//   zkr_discoverybench --connect CS [--instances K] [--rounds N] [--curator-classpath CP]
// For each program: the harness writes K instances of the service "svc" (Curator's JSON, made with
// plain creates, so neither program registers them), then starts the program, which waits for the
// K instances in its cache and calls its provider's get_instance for one second ("lookups N NS").
// Then N rounds: the harness writes one more instance, noting the monotonic clock just before the
// create; the program prints "seen ID NS" (CLOCK_MONOTONIC, which Java's System.nanoTime reads on
// Linux too) when its cache first shows it. The figure is the time from the create to that.
// Prints one JSON line: each program's lookups per second and seen times.
//   zkr_discoverybench peer CS BASE K   (the zkr program: a service_provider of BASE/svc)
#include "process.hpp"  // test/support: child processes, temporary files

#include <zkr/service_discovery.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch()).count(); }

int peer(const std::string& cs, const std::string& base, std::size_t k) {
    zkr::client_options o;
    o.connect_string = cs;
    zkr::client c(o);
    c.start();
    if (!c.block_until_connected(10s)) return 3;
    // The seen times come from a cache of its own, as a user's listener would; the lookups from
    // the provider (its own cache of the same service).
    zkr::service_cache cache(c, base, "svc");
    zkr::service_provider provider(c, base, "svc");
    std::mutex mutex;
    std::set<std::string> seen;
    const auto report_new = [&] {
        const auto t = now_ns();
        std::lock_guard lock(mutex);
        for (const auto& i : cache.instances())
            if (seen.insert(i.id).second && seen.size() > k) {
                std::printf("seen %s %lld\n", i.id.c_str(), static_cast<long long>(t));
                std::fflush(stdout);
            }
    };
    // The listener runs on the callback thread once a change is in the cache's view.
    auto sub = cache.add_listener(report_new);
    cache.start();
    provider.start();
    while (provider.get_all_instances().size() < k) std::this_thread::sleep_for(1ms);
    report_new();
    std::size_t lookups = 0;
    const auto start = clk::now();
    while (clk::now() - start < 1s)
        for (int n = 0; n < 100; ++n) lookups += provider.get_instance() ? 1 : 0;
    std::printf("lookups %zu %lld\n", lookups, static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - start).count()));
    std::fflush(stdout);
    for (;;) ::pause();  // until killed
}

std::vector<std::string> words_of(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 4 && args[0] == "peer") return peer(args[1], args[2], std::stoul(args[3]));
    std::string cs, classpath;
    int rounds = 20;
    std::size_t k = 10;
    for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
        if (args[i] == "--connect") cs = args[i + 1];
        else if (args[i] == "--rounds") rounds = std::stoi(args[i + 1]);
        else if (args[i] == "--instances") k = std::stoul(args[i + 1]);
        else if (args[i] == "--curator-classpath") classpath = args[i + 1];
        else {
            std::cerr << "usage: zkr_discoverybench --connect CS [--instances K] [--rounds N] [--curator-classpath CP]\n";
            return 2;
        }
    }
    zkr::client_options o;
    o.connect_string = cs;
    zkr::client writer(o);
    writer.start();
    if (!writer.block_until_connected(10s)) return 3;
    struct program {
        std::string name, base;
        std::vector<std::string> argv;
    };
    const std::string run = "/discoverybench-" + std::to_string(::getpid());
    std::vector<program> programs = {{"zkr service_provider", run + "/zkr", {argv[0], "peer", cs, run + "/zkr", std::to_string(k)}}};
    if (!classpath.empty())
        programs.push_back({"Curator ServiceProvider", run + "/curator",
                            {"java", "-Xmx256m", "-cp", classpath, "CuratorDiscoveryBench", cs, run + "/curator", std::to_string(k)}});
    // An instance node as Curator's serializer writes it.
    const auto write_instance = [&](const std::string& base, const std::string& id) {
        zkr::service_instance i;
        i.name = "svc";
        i.id = id;
        i.address = "10.0.0.1";
        i.port = 8080;
        i.registration_time_utc = 1700000000000;
        zkr::create_options co;
        co.create_parents = true;
        writer.create(base + "/svc/" + id, zkr::service_instance_to_json(i), co);
    };
    std::ostringstream json;  // (a stream: GCC 12 at -O3 warns falsely on long string sums)
    json << "{";
    bool first_program = true;
    for (const auto& p : programs) {
        for (std::size_t n = 0; n < k; ++n) write_instance(p.base, "i" + std::to_string(n));
        const auto out = zkr::test::temp_file("discoverybench");
        std::vector<std::string> sh = {"/bin/sh", "-c", "exec \"$@\" >'" + out + "'", "sh"};
        sh.insert(sh.end(), p.argv.begin(), p.argv.end());
        zkr::test::child_process process(sh);
        // Waits for a line of the program's starting with `word` (and id), up to 60 s (a JVM starts).
        const auto wait_for = [&](const std::string& word, const std::string& id) -> std::vector<std::string> {
            const auto until = clk::now() + 60s;
            for (;;) {
                for (const auto& line : zkr::test::read_finished_lines(out)) {
                    auto w = words_of(line);
                    if (!w.empty() && w[0] == word && (id.empty() || (w.size() > 1 && w[1] == id))) return w;
                }
                if (clk::now() > until) {
                    std::cerr << p.name << ": no \"" << word << " " << id << "\" within 60 s\n";
                    std::exit(1);
                }
                std::this_thread::sleep_for(1ms);
            }
        };
        const auto lookups = wait_for("lookups", "");
        const double per_second = std::stod(lookups[1]) / (std::stod(lookups[2]) / 1e9);
        std::vector<double> seen_ms;
        for (int r = 0; r < rounds + 1; ++r) {  // (the first round warms up: not counted)
            const auto id = "r" + std::to_string(r);
            const auto t0 = now_ns();
            write_instance(p.base, id);
            const auto w = wait_for("seen", id);
            if (r > 0) seen_ms.push_back(static_cast<double>(std::stoll(w[2]) - t0) / 1e6);
        }
        process.kill(SIGKILL);
        process.wait();
        std::remove(out.c_str());
        auto sorted = seen_ms;
        std::sort(sorted.begin(), sorted.end());
        json << (first_program ? "" : ",") << '"' << p.name << "\":{\"lookups_per_s\":" << per_second << ",\"seen_median_ms\":" << sorted[sorted.size() / 2]
             << ",\"seen_max_ms\":" << sorted.back() << ",\"seen_ms\":[";
        for (std::size_t i = 0; i < seen_ms.size(); ++i) json << (i ? "," : "") << seen_ms[i];
        json << "]}";
        first_program = false;
    }
    // Nothing left behind: the instances written, and the run's nodes.
    for (const auto& p : programs) {
        boost::system::error_code ec;
        for (const auto& child : writer.get_children(p.base + "/svc", ec).children) writer.remove(p.base + "/svc/" + child, {}, ec);
        writer.remove(p.base + "/svc", {}, ec);
        writer.remove(p.base, {}, ec);
    }
    boost::system::error_code ec;
    writer.remove(run, {}, ec);
    std::cout << json.str() << "}" << std::endl;
    return 0;
}
