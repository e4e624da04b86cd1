#!/usr/bin/python3
"""Service discovery from the cached view: zkr's service_provider beside Curator 5.4's
ServiceProvider (bench/peers/CuratorDiscoveryBench.java), on one ZooKeeper server, in one run
(bench/discoverybench.cpp measures both, each program in a process of its own).

    /usr/bin/python3 bench/discovery_compare.py [--build build/release] [--rounds 20] [--instances 10] [--quick]

Two figures per program: get_instance() calls per second from a provider whose cache holds the
instances (one thread, round robin), and the time from another client's create of a new instance
to the program's cache listener seeing it. Writes bench/results/discovery-latest.json and prints a
table. --quick (used by CI) runs 3 rounds, only to prove that both programs still work (its figures
go to BUILD/bench/discovery-quick.json)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import CURATOR_CP, ROOT, Server, run_json  # noqa: E402

DISCOVERY_JAR = "/usr/share/java/curator-x-discovery.jar"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds = 3
    classes = tempfile.mkdtemp(prefix="zkr-discovery-bench-classes-")
    cp = DISCOVERY_JAR + ":" + CURATOR_CP
    subprocess.run(["javac", "-d", classes, "-cp", cp, os.path.join(ROOT, "bench", "peers", "CuratorDiscoveryBench.java")], check=True)
    server = Server(force_sync=False)
    try:
        result = run_json([os.path.join(a.build, "bench", "zkr_discoverybench"), "--connect", server.connect, "--rounds", str(a.rounds),
                           "--instances", str(a.instances), "--curator-classpath", classes + ":" + cp], 600)
    finally:
        server.stop()
    print("\nService discovery, %d instances in the cache, %d rounds:" % (a.instances, a.rounds))
    print("| program | get_instance() per s | a new instance seen, median ms | max ms |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in result.items():
        print("| %s | %s | %.2f | %.2f |" % (name, format(int(r["lookups_per_s"]), ","), r["seen_median_ms"], r["seen_max_ms"]))
    out = os.path.join(a.build, "bench", "discovery-quick.json") if a.quick else os.path.join(ROOT, "bench", "results", "discovery-latest.json")
    with open(out, "w") as f:
        json.dump({"rounds": a.rounds, "instances": a.instances, "programs": result}, f, indent=1)
    print("written to", out)


if __name__ == "__main__":
    main()
