#!/usr/bin/python3
"""lockbench comparison: zkr against Apache Curator 5.4 and Kazoo 2.8 (and the raw C-client floor)
on one ZooKeeper server, in one run, alternating between the programs; medians of --rounds runs.

    /usr/bin/python3 bench/compare.py [--build build/release] [--rounds 3] [--seconds 5]
                                      [--warm-rounds 1] [--force-sync no|yes|both]
                                      [--placement shared|split|both] [--write-docs] [--quick]

Each fresh server first gets --warm-rounds rounds of every program that are not counted: the
server's JIT compiles its hot paths during the first seconds, and whichever program ran first
used to be measured against a slower server (its round's ratio was 1.0-1.1x where the others
gave 1.5-2.2x). bench/ab.py drops its first round for the same reason.

--placement split runs the server on core 0 and every client program on core 1 (taskset), as
separate machines would keep the client's CPU from competing with the server's; shared (the
default) lets both use every core.

For each program's run the server's load is sampled too (its CPU time, every 0.25 s; the busiest
2 s are kept): a program held by the server's CPU shows its core near 1 in split.

Writes bench/results/latest.json and prints a table. --write-docs regenerates
docs/performance.md's figures and docs/performance.svg. --quick (used by CI) runs W1 and W2
briefly, once, only to prove that every program still works."""
import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CURATOR_CP = "/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar"
PEER_WORKLOADS = ["w0", "w1", "w2", "w3", "w4", "w5", "w8", "w9", "w10"]
NAMES = {
    "w0": "W0 plain get_data, 1 session (ops/s)",
    "w1": "W1 mutex, 1 session, uncontended",
    "w2": "W2 mutex, 8 sessions",
    "w3": "W3 mutex, 64 sessions",
    "w4": "W4 semaphore (3 leases), 8 sessions",
    "w5": "W5 semaphore mutex, 8 sessions",
    "w8": "W8 read-write lock, 8 sessions, 90% reads",
    "w9": "W9 leader failover after a clean close, 2 sessions",
    "w10": "W10 leader failover after SIGKILL (2 s sessions), 2 sessions",
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def four_letter(port, cmd):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(cmd.encode())
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    return data.decode()
                data += chunk
    except OSError:
        return ""


class Server:
    """One standalone ZooKeeper (the Debian package's), full JIT, tickTime 500."""

    def __init__(self, force_sync, pin=()):
        self.dir = tempfile.mkdtemp(prefix="zkr-bench-zk-")
        self.port = free_port()
        with open(os.path.join(self.dir, "zoo.cfg"), "w") as f:
            f.write("tickTime=500\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=%s\n"
                    % (self.dir, self.port, "yes" if force_sync else "no"))
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            list(pin) + ["java", "-Xmx512m", "-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
             "org.apache.zookeeper.server.ZooKeeperServerMain", os.path.join(self.dir, "zoo.cfg")],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while "Mode: " not in four_letter(self.port, "srvr"):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("ZooKeeper did not start; see " + self.dir)
            time.sleep(0.2)
        self.connect = "127.0.0.1:%d" % self.port

    def cpu_seconds(self):
        """The server's CPU time so far, all its threads (utime + stime of /proc/PID/stat)."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ServerLoad:
    """How busy the server was while one program ran: its CPU time sampled every 0.25 s, and the
    busiest WINDOW seconds taken (in cores; split gives the server one). A program's run includes
    its start (a JVM's) and its warm-up, when the load is lighter or none, so the whole run's
    average would understate the load of its measured seconds."""

    WINDOW = 2.0

    def __init__(self, server):
        self.server, self.samples, self.done = server, [], threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while True:
            try:
                self.samples.append((time.monotonic(), self.server.cpu_seconds()))
            except OSError:  # the server has gone: the run itself will fail and say so
                return
            if self.done.wait(0.25):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()

    def busiest(self):
        """Cores busy in the busiest window; over the whole run if it was shorter than one."""
        if not self.samples:
            return 0.0
        (t_first, c_first), (t_last, c_last) = self.samples[0], self.samples[-1]
        best = (c_last - c_first) / (t_last - t_first) if t_last > t_first else 0.0
        for i, (t0, c0) in enumerate(self.samples):
            for t1, c1 in self.samples[i + 1:]:
                if t1 - t0 >= self.WINDOW:
                    best = max(best, (c1 - c0) / (t1 - t0))
                    break
        return best


def run_json(cmd, timeout):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), out.returncode, out.stderr[-2000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--warm-rounds", type=int, default=1)
    ap.add_argument("--force-sync", choices=["no", "yes", "both"], default="no")
    ap.add_argument("--placement", choices=["shared", "split", "both"], default="shared")
    ap.add_argument("--workloads", default=",".join(PEER_WORKLOADS))
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "latest.json"))
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.seconds, a.warmup, a.warm_rounds, a.workloads = 1, 0.5, 0.5, 0, "w1,w2"
    workloads = a.workloads.split(",")
    lockbench = os.path.join(a.build, "bench", "zkr_lockbench")
    classes = tempfile.mkdtemp(prefix="zkr-bench-java-")
    subprocess.run(["javac", "-d", classes, "-cp", CURATOR_CP, os.path.join(ROOT, "bench", "peers", "CuratorBench.java")],
                   check=True)
    kazoo = os.path.join(ROOT, "bench", "peers", "kazoo_bench.py")
    secs, warm = str(a.seconds), str(a.warmup)
    timeout = 120 + 3 * a.seconds

    def programs(w):
        clients = {"w0": 1, "w1": 1, "w2": 8, "w3": 64, "w4": 8, "w5": 8, "w8": 8, "w9": 2, "w10": 2}[w]
        p = {
            "zkr": lambda cs: [lockbench, "--connect", cs, "--workload", w, "--seconds", secs, "--warmup", warm, "--json"],
            "curator": lambda cs: ["java", "-Xmx512m", "-cp", classes + ":" + CURATOR_CP, "CuratorBench", cs, w, str(clients), secs, warm],
            "kazoo": lambda cs: ["/usr/bin/python3", kazoo, cs, w, str(clients), secs, warm],
        }
        if w == "w8":
            # Kazoo 2.8's ReadLock/WriteLock deadlock under contention: a reader woken by a
            # writer's release watches a later writer, which watches it (python-zk/kazoo#649, fixed
            # after 2.8). With 2 clients its W8 hangs within seconds (measured): no figure to show.
            del p["kazoo"]
        if w in ("w9", "w10"):  # against Curator's LeaderLatch (Kazoo's Election is another protocol)
            del p["kazoo"]
        if w in ("w1", "w2", "w8"):  # the pipelined release, opt-in (async_release on the lock objects)
            p["zkr-async"] = lambda cs: [lockbench, "--connect", cs, "--workload", w, "--release", "async", "--seconds", secs,
                                         "--warmup", warm, "--json"]
        if w == "w0":  # plain operations: zkr's sync calls against the C client's and Curator's
            del p["kazoo"]
            p["raw"] = lambda cs: [lockbench, "--connect", cs, "--workload", "raw0", "--seconds", secs, "--warmup", warm, "--json"]
            # The C client through a network thread, as zkr's calls go (issue 24): today's hop,
            # and the baton over one shared epoll that would avoid it (bench/threaded_raw.hpp).
            for model in ("hop", "epoll"):
                p["raw-" + model] = lambda cs, m=model: [lockbench, "--connect", cs, "--workload", "raw0-" + m, "--seconds", secs,
                                                         "--warmup", warm, "--json"]
        if w == "w1":  # lock caching, opt-in (mutex_options::cache_hold): no request while nobody else queues
            p["zkr-cached"] = lambda cs: [lockbench, "--connect", cs, "--workload", w, "--cache-hold", "--seconds", secs,
                                          "--warmup", warm, "--json"]
        if w == "w1":
            p["raw"] = lambda cs: [lockbench, "--connect", cs, "--workload", "raw", "--seconds", secs, "--warmup", warm, "--json"]
        return p

    syncs = {"no": [False], "yes": [True], "both": [False, True]}[a.force_sync]
    results = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)},
               "server": "ZooKeeper 3.8 standalone (Debian package), tickTime 500, loopback",
               "rounds": a.rounds, "warm_rounds": a.warm_rounds, "seconds": a.seconds, "warmup": a.warmup, "runs": {}}
    placements = {"shared": ["shared"], "split": ["split"], "both": ["split", "shared"]}[a.placement]
    if "split" in placements and len(os.sched_getaffinity(0)) < 2:
        sys.exit("--placement split needs two cores")
    for sync, placement in [(x, y) for x in syncs for y in placements]:
        key = "forceSync=" + ("yes" if sync else "no") + (", split" if placement == "split" else "")
        pin_server, pin_client = (["taskset", "-c", "0"], ["taskset", "-c", "1"]) if placement == "split" else ([], [])
        server = Server(sync, pin_server)
        runs = results["runs"].setdefault(key, {})
        try:
            for r in range(-a.warm_rounds, a.rounds):
                warming = r < 0
                for w in workloads:
                    progs = list(programs(w).items())
                    rot = r % len(progs)  # alternate who goes first
                    for name, cmd in progs[rot:] + progs[:rot]:
                        with ServerLoad(server) as load:
                            res = run_json(pin_client + cmd(server.connect), timeout)
                        if not res.get("rate", 0) > 0:
                            raise RuntimeError("%s made no lock cycle in %s: %s" % (name, w, res))
                        res["server_cores_busy"] = load.busiest()
                        res["server_cpu_us_per_cycle"] = res["server_cores_busy"] * 1e6 / res["rate"]
                        if not warming:
                            runs.setdefault(w, {}).setdefault(name, []).append(res)
                        print("%s %s %s %-8s %8.0f /s  p50 %7.0f us  server req/cycle %.2f  server busy %.2f cores" % (
                            key, "warm-up (not counted)" if warming else "round %d" % (r + 1), w, name, res["rate"],
                            res["acquire_p50_us"], res.get("server_requests_per_cycle", 0), res["server_cores_busy"]), flush=True)
                if warming:
                    continue
                if not a.quick:  # zkr only, every round (medians): the deep queue, notification latency
                    for w in ["w7", "notify"]:
                        res = run_json(pin_client + [lockbench, "--connect", server.connect, "--workload", w, "--seconds", secs, "--json"],
                                       timeout)
                        runs.setdefault(w, {}).setdefault("zkr", []).append(res)
            if not a.quick:  # memory does not depend on the server's load: once
                res = run_json(pin_client + [lockbench, "--connect", server.connect, "--workload", "mem", "--seconds", secs, "--json"],
                               timeout)
                runs.setdefault("mem", {}).setdefault("zkr", []).append(res)
        finally:
            server.stop()
    shutil.rmtree(classes, ignore_errors=True)

    # Medians.
    summary = {}
    for key, by_w in results["runs"].items():
        for w, by_p in by_w.items():
            for p, lst in by_p.items():
                med = {}
                for field in lst[0]:
                    vals = [x[field] for x in lst if isinstance(x.get(field), (int, float))]
                    if vals and not isinstance(lst[0][field], str):
                        med[field] = statistics.median(vals)
                summary.setdefault(key, {}).setdefault(w, {})[p] = med
    results["median"] = summary
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    table = render_table(results)
    print(table)
    if a.write_docs:
        write_docs(results, table)
    return 0


def render_table(results):
    lines = []
    for key, by_w in results["median"].items():
        lines.append("")
        lines.append("%s: medians of %d run(s) of %.1f s each" % (key, results["rounds"], results["seconds"]))
        lines.append("")
        lines.append("| workload | program | cycles/s | acquire p50 | acquire p99 | handoff p50 | handoff p99 | server requests/cycle | CPU ms/1000 cycles | min/max per client | zkr's ratio |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for w in PEER_WORKLOADS:
            if w not in by_w:
                continue
            zkr_rate = by_w[w].get("zkr", {}).get("rate", 0)
            for p in ["zkr", "zkr-async", "zkr-cached", "curator", "kazoo", "raw"]:
                m = by_w[w].get(p)
                if not m:
                    continue
                ratio = "" if p.startswith("zkr") or not m.get("rate") else "%.2fx" % (zkr_rate / m["rate"])
                handoff = ("%.0f us" % m["handoff_p50_us"], "%.0f us" % m["handoff_p99_us"]) if m.get("handoff_p50_us") else ("", "")
                lines.append("| %s | %s | %.0f | %.0f us | %.0f us | %s | %s | %.2f | %.0f | %d / %d | %s |" % (
                    NAMES[w], p, m["rate"], m["acquire_p50_us"], m["acquire_p99_us"], handoff[0], handoff[1],
                    m.get("server_requests_per_cycle", 0), m.get("cpu_ms_per_1000_cycles", 0),
                    m.get("min_per_client", 0), m.get("max_per_client", 0), ratio))
        extra = []
        if "w0" in by_w:
            z = by_w["w0"].get("zkr", {}).get("create_delete_per_s", 0)
            peers = [(p, by_w["w0"][p].get("create_delete_per_s", 0)) for p in ["raw", "curator"] if by_w["w0"].get(p)]
            extra.append("W0 create + delete (one session, sequential): zkr %.0f/s, %s" % (
                z, ", ".join("%s %.0f/s (zkr %.2fx)" % (p, r, z / r if r else 0) for p, r in peers)))
        for w in ["w1", "w2", "w8"]:
            a = by_w.get(w, {}).get("zkr-async")
            if not a:
                continue
            peers = [(p, by_w[w][p]["rate"]) for p in ["curator", "kazoo", "raw"] if by_w[w].get(p, {}).get("rate")]
            extra.append("%s with async_release (zkr-async: the release is not awaited, the next acquire is pipelined behind "
                         "its delete): %.0f/s, %s" % (w.upper(), a["rate"], ", ".join(
                             "%.2fx %s" % (a["rate"] / r, p) for p, r in peers)))
        for w in PEER_WORKLOADS:
            # Rates, except for the failovers (W9, W10): their time, where lower is better.
            field = "handoff_p50_us" if w in ("w9", "w10") else "rate"
            rounds = results["runs"].get(key, {}).get(w, {})
            for z in ["zkr", "zkr-async"]:
                zkr_values = [x.get(field, 0) for x in rounds.get(z, [])]
                for p in ["curator", "kazoo"]:
                    peer_values = [x.get(field, 0) for x in rounds.get(p, [])]
                    if len(zkr_values) > 1 and len(peer_values) == len(zkr_values) and all(peer_values):
                        extra.append("%s %s / %s round by round (%s): %s" % (
                            w.upper(), z, p, "failover p50" if field != "rate" else "cycles/s",
                            ", ".join("%.2fx" % (v / c) for v, c in zip(zkr_values, peer_values))))
        for w in PEER_WORKLOADS:
            # A program held by the server's CPU (split gives the server one core) shows it near 1.
            progs = [(p, m) for p, m in by_w.get(w, {}).items() if "server_cores_busy" in m]
            if w not in ("w9", "w10") and progs:
                extra.append("%s, the server's load in each program's busiest %.0f s (cores busy; its CPU per cycle): %s" % (
                    w.upper(), ServerLoad.WINDOW, ", ".join("%s %.2f (%.0f us)" % (p, m["server_cores_busy"], m["server_cpu_us_per_cycle"])
                                                            for p, m in progs)))
        if "w7" in by_w:
            m = by_w["w7"]["zkr"]
            w2 = by_w.get("w2", {}).get("zkr", {})
            extra.append("W7 (zkr, %d waiters queued on one lock): %.0f handoffs/s, %.2f server requests per handoff%s" % (
                m.get("queued", 0), m["rate"], m.get("server_requests_per_cycle", 0),
                " (W2: %.0f/s, %.2f)" % (w2["rate"], w2.get("server_requests_per_cycle", 0)) if w2.get("rate") else ""))
        if "notify" in by_w:
            m = by_w["notify"]["zkr"]
            extra.append("Server notification latency (a delete on one session until the watch fires on another): p50 %.0f us; "
                         "a read's round trip p50 %.0f us" % (m["handoff_p50_us"], m.get("read_round_trip_p50_us", 0)))
            w2 = by_w.get("w2", {}).get("zkr", {})
            if w2.get("handoff_p50_us"):
                bound = notification_bound(m)
                extra.append("W6 (the handoffs of W2): p50 %.0f us against notification + one round trip = %.0f us: %s; "
                             "p99 %.0f us; the release's own round trip p50 %.0f us" % (
                                 w2["handoff_p50_us"], bound, "within" if w2["handoff_p50_us"] <= bound else "%.0f us over" % (
                                     w2["handoff_p50_us"] - bound), w2.get("handoff_p99_us", 0), w2.get("release_p50_us", 0)))
                margins = bound_margins(results["runs"].get(key, {}), "w2")
                if margins:
                    extra.append("W6 round by round (each round's handoff p50 against that round's notification + round trip, "
                                 "which drift together with the machine): within in %d of %d rounds; the median margin %+.0f us "
                                 "(negative: below the bound)" % (sum(1 for x in margins if x <= 0), len(margins),
                                                                 statistics.median(margins)))
            key_runs = results["runs"].get(key, {})
            failovers, floors = bound_margins(key_runs, "w9"), notification_floors(key_runs)
            if failovers and floors:
                extra.append("W9 round by round: zkr's failover within that round's notification + round trip in %d of %d "
                             "rounds; that round's notification alone against Curator's failover (the ratio of a client "
                             "that cost nothing above the notification): %s" % (
                                 sum(1 for x in failovers if x <= 0), len(failovers), ", ".join("%.2fx" % f for f in floors)))
        if "mem" in by_w:
            m = by_w["mem"]["zkr"]
            extra.append("Memory: one zkr client %.1f MiB RSS; holding 1,000 locks (1,000 lock objects) %.1f MiB (%.1f KiB per held lock)"
                         % (m["rss_kib_client"] / 1024, m["rss_kib_with_1000_held"] / 1024, m["kib_per_held_lock"]))
        if extra:
            lines.append("")
            lines.extend("- " + e for e in extra)
    return "\n".join(lines)


def notification_bound(notify):
    """One notification plus one read round trip (a `notify` result): the bound of W6's handoff
    and of W9's failover."""
    return notify["handoff_p50_us"] + notify.get("read_round_trip_p50_us", 0)


def bound_margins(runs, w):
    """Per round: zkr's handoff p50 in workload w (W2's handoffs, W9's failovers) minus that
    round's notification_bound; negative is within."""
    handoffs = [r.get("handoff_p50_us") for r in runs.get(w, {}).get("zkr", [])]
    notifies = runs.get("notify", {}).get("zkr", [])
    return [h - notification_bound(n) for h, n in zip(handoffs, notifies) if h and n.get("handoff_p50_us")]


def notification_floors(runs):
    """Per round: the notification's p50 over Curator's W9 failover p50. No client reacts faster
    than the notification through its own calls, so this is where a zero-cost zkr would stand."""
    failovers = [r.get("handoff_p50_us") for r in runs.get("w9", {}).get("curator", [])]
    notifies = runs.get("notify", {}).get("zkr", [])
    return [n["handoff_p50_us"] / c for c, n in zip(failovers, notifies) if c and n.get("handoff_p50_us")]


def write_docs(results, table):
    svg_path = os.path.join(ROOT, "docs", "performance.svg")
    with open(svg_path, "w") as f:
        f.write(render_svg(results))
    md_path = os.path.join(ROOT, "docs", "performance.md")
    with open(md_path) as f:
        doc = f.read()
    begin, end = "<!-- figures: generated by bench/compare.py --write-docs -->", "<!-- end of figures -->"
    m = results["machine"]
    body = "%s\n\nMachine: %d CPUs, %d GiB, %s. %s. Each program ran %.1f s per run after a %.1f s warm-up, one after the other, " \
           "the order rotating each round, after %d warm-up round(s) on each fresh server that are not counted; figures are medians of %d rounds.\n%s\n\n![cycles per second](performance.svg)\n\n%s" % (
               begin, m["cpus"], m["memory_gib"], m["platform"], results["server"], results["seconds"], results["warmup"],
               results.get("warm_rounds", 0), results["rounds"], table, end)
    if begin in doc:
        doc = doc[:doc.index(begin)] + body + doc[doc.index(end) + len(end):]
    else:
        doc += "\n" + body + "\n"
    with open(md_path, "w") as f:
        f.write(doc)


def render_svg(results):
    """Grouped bars: cycles/s per workload and program, for each forceSync setting."""
    colors = {"zkr": "#1f77b4", "zkr-async": "#9ecae1", "curator": "#ff7f0e", "kazoo": "#2ca02c", "raw": "#7f7f7f"}
    panels = list(results["median"].items())
    width, panel_h, top = 760, 260, 30
    height = top + panel_h * len(panels) + 30
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (width, height)]
    for pi, (key, by_w) in enumerate(panels):
        y0 = top + pi * panel_h
        ws = [w for w in PEER_WORKLOADS if w in by_w]
        peak = max([m.get("rate", 0) for w in ws for m in by_w[w].values()] + [1])
        out.append('<text x="10" y="%d" font-size="13" font-weight="bold">Lock cycles per second (%s; higher is better)</text>' % (y0, key))
        chart_h, x0, group_w = panel_h - 70, 60, (width - 80) / max(len(ws), 1)
        for wi, w in enumerate(ws):
            progs = [p for p in ["zkr", "zkr-async", "curator", "kazoo", "raw"] if p in by_w[w]]
            bar_w = (group_w - 20) / max(len(progs), 1)
            for bi, p in enumerate(progs):
                rate = by_w[w][p].get("rate", 0)
                h = chart_h * rate / peak
                x = x0 + wi * group_w + bi * bar_w
                y = y0 + 15 + chart_h - h
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (x, y, bar_w - 2, h, colors[p]))
                out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%.0f</text>' % (x + bar_w / 2, y - 2, rate))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x0 + wi * group_w + (group_w - 20) / 2, y0 + 30 + chart_h, w.upper()))
        lx = x0
        for p in ["zkr", "zkr-async", "curator", "kazoo", "raw"]:
            out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>' % (
                lx, y0 + 40 + chart_h, colors[p], lx + 14, y0 + 49 + chart_h, p))
            lx += 90
    out.append("</svg>")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
