#!/usr/bin/python3
"""The tree cache side by side: zkr's tree_cache (bench/cachebench.cpp), Curator 5.4's TreeCache and
CuratorCache (bench/peers/CuratorCacheBench.java) and Kazoo 2.8's TreeCache
(bench/peers/kazoo_cache_bench.py), on one ZooKeeper server, in one run, the programs in turn;
medians of --rounds runs.

    /usr/bin/python3 bench/cache_compare.py [--build build/release] [--rounds 3] [--nodes 10000]
                                            [--bytes 100] [--changes 200] [--quick]

zkr_cachebench makes the tree first (depth 3 below /cachebench: 10 x 10 x nodes/100 leaves, each
node --bytes long), in a round of its own that is not counted (it also warms the server's JIT).
Each program then, on the same tree: starts its cache and waits for initialized (the bootstrap),
reads its resident memory before and after (per cached node; the JVM's heap in use after a full GC
too), and times --changes writes on another session, one at a time, each until its listener runs
(zkr_cachebench also times, beside each, the bound it is held to: one notification of a plain
watch plus one read's round trip, and the same work by hand, through the same clients; zkr's
figures against that bound come from --rounds runs of their own with the writer in a process of
its own).
Then zkr's churn, in a run of its own: 1,000 writes a second for 10 s, the cache's lag, then equal
to the server (the peers' programs have no churn).
Writes bench/results/cache-latest.json and prints a table. --quick (used by CI) runs 1,000 nodes
and 20 changes once, only to prove that every program still works (its figures go to
BUILD/bench/cache-quick.json)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import CURATOR_CP, ROOT, Server, run_json  # noqa: E402

PROGRAMS = ["zkr tree_cache", "Curator TreeCache", "Curator CuratorCache", "Kazoo TreeCache"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--bytes", type=int, default=100)
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.nodes, a.changes = 1, 1000, 20
    bench = os.path.join(a.build, "bench", "zkr_cachebench")
    classes = tempfile.mkdtemp(prefix="zkr-cache-bench-classes-")
    subprocess.run(["javac", "-d", classes, "-cp", CURATOR_CP, os.path.join(ROOT, "bench", "peers", "CuratorCacheBench.java")],
                   check=True)
    kazoo = os.path.join(ROOT, "bench", "peers", "kazoo_cache_bench.py")
    server = Server(force_sync=False)
    try:
        cs = server.connect
        commands = {
            "zkr tree_cache": [bench, "--connect", cs, "--nodes", str(a.nodes), "--bytes", str(a.bytes), "--changes", str(a.changes),
                               "--churn-seconds", "0"],
            "Curator TreeCache": ["java", "-Xmx1g", "-cp", classes + ":" + CURATOR_CP, "CuratorCacheBench", cs, "treecache", str(a.changes)],
            "Curator CuratorCache": ["java", "-Xmx1g", "-cp", classes + ":" + CURATOR_CP, "CuratorCacheBench", cs, "curatorcache", str(a.changes)],
            "Kazoo TreeCache": ["/usr/bin/python3", kazoo, cs, str(a.changes)],
        }
        run_json(commands["zkr tree_cache"], 600)  # makes the tree; not counted
        runs = {p: [] for p in PROGRAMS}
        for r in range(a.rounds):
            order = PROGRAMS[r % len(PROGRAMS):] + PROGRAMS[:r % len(PROGRAMS)]
            for p in order:
                cpu_before = server.cpu_seconds()
                result = run_json(commands[p], 600)
                # The server's CPU time over the run: nearly all of it the bootstrap's reads (the
                # changes are a few hundred writes); over the bootstrap's time, its cores in use.
                result["server_cpu_s"] = round(server.cpu_seconds() - cpu_before, 2)
                result["server_cores_in_bootstrap"] = round(result["server_cpu_s"] / (result["bootstrap_ms"] / 1000), 2)
                if result["shown"] != result["nodes"]:
                    sys.exit("%s showed %d of %d nodes" % (p, result["shown"], result["nodes"]))
                runs[p].append(result)
                print("round %d %s: %s" % (r + 1, p, json.dumps(result)), flush=True)
        # zkr's change against its bound, with the writer in a process of its own (in one process
        # the cache's read can wait for the writer's thread to leave the C client: cachebench.cpp).
        bound_runs = [run_json([bench, "--connect", cs, "--nodes", str(a.nodes), "--bytes", str(a.bytes), "--changes", str(a.changes),
                                "--churn-seconds", "0", "--writer-process", "yes"], 600) for _ in range(a.rounds)]
        # zkr's churn, in a run of its own (its writes would count in the server's load above).
        churn = run_json([bench, "--connect", cs, "--nodes", str(a.nodes), "--bytes", str(a.bytes), "--changes", "1"]
                         + (["--churn-rate", "200", "--churn-seconds", "1"] if a.quick else []), 600)["churn"]
    finally:
        server.stop()

    def median(p, *keys):
        values = []
        for run in runs[p]:
            v = run
            for k in keys:
                v = v.get(k) if isinstance(v, dict) else None
            if v is not None:
                values.append(v)
        return statistics.median(values) if values else None

    summary = {p: {"bootstrap_ms": median(p, "bootstrap_ms"), "server_cores": median(p, "server_cores_in_bootstrap"),
                   "rss_bytes_per_node": median(p, "rss_bytes_per_node"),
                   "heap_bytes_per_node": median(p, "heap_bytes_per_node"),
                   "p50_us": median(p, "change_latency_us", "p50"), "p99_us": median(p, "change_latency_us", "p99")}
               for p in PROGRAMS}
    nodes = runs[PROGRAMS[0]][0]["nodes"]
    zkr_boot = summary["zkr tree_cache"]["bootstrap_ms"]
    print("\n%d nodes of %d bytes, %d changes, medians of %d rounds:" % (nodes, a.bytes, a.changes, a.rounds))
    print("| cache | bootstrap (ms) | zkr's speed-up | server cores busy in it | resident bytes per node | JVM heap per node | change p50 (us) | change p99 (us) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for p in PROGRAMS:
        s = summary[p]
        heap = "%.0f" % s["heap_bytes_per_node"] if s["heap_bytes_per_node"] is not None else ""
        print("| %s | %.0f | %.2fx | %.2f | %.0f | %s | %.0f | %.0f |" % (p, s["bootstrap_ms"], s["bootstrap_ms"] / zkr_boot, s["server_cores"],
                                                                 s["rss_bytes_per_node"], heap, s["p50_us"], s["p99_us"]))
    print("\nzkr's churn (%d writes in %.1f s, %d heard): lag p50 %.1f ms, p99 %.1f ms, max %.1f ms; equal to the server after: %s"
          % (churn["writes"], churn["seconds"], churn["heard"], churn["lag_ms"]["p50"], churn["lag_ms"]["p99"], churn["lag_ms"]["max"],
             str(churn["equal_to_server"]).lower()))
    # The change's bound: one notification plus one read's round trip (issue 45), each measured by
    # zkr_cachebench beside every change, through the same clients; and the same work done by hand
    # (a plain watch whose watcher reads again), the client's own floor for it.
    bound = [(r["change_latency_us"]["p50"], r["notification_us"]["p50"], r["read_round_trip_us"]["p50"], r["by_hand_us"]["p50"])
             for r in bound_runs]
    for change, notification, round_trip, by_hand in bound:
        print("zkr's change p50 %.0f us (writer apart) against one notification (%.0f us) plus one round trip (%.0f us) = %.0f us "
              "(%.2fx); the same by hand with the client's calls: %.0f us (%.2fx)"
              % (change, notification, round_trip, notification + round_trip, change / (notification + round_trip), by_hand, change / by_hand))
    if not churn["equal_to_server"]:
        sys.exit("zkr's cache did not equal the server after the churn")
    # (--quick's figures are no results: they go into the build, not bench/results.)
    out = os.path.join(a.build, "bench", "cache-quick.json") if a.quick else os.path.join(ROOT, "bench", "results", "cache-latest.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"nodes": nodes, "bytes": a.bytes, "changes": a.changes, "rounds": a.rounds, "runs": runs, "summary": summary,
                   "zkr_change_bound_us": [{"change_p50": c, "notification_p50": n, "round_trip_p50": t, "by_hand_p50": h} for c, n, t, h in bound],
                   "zkr_churn": churn}, f, indent=1)


if __name__ == "__main__":
    main()
