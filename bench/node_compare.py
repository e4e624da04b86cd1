#!/usr/bin/python3
"""A node's return after its session expires: zkr's persistent_node beside Curator 5.4's
PersistentNode (bench/peers/CuratorNodeBench.java), on one ZooKeeper server, in one run
(bench/nodebench.cpp measures both, each program in a process of its own).

    /usr/bin/python3 bench/node_compare.py [--build build/release] [--rounds 20] [--quick]

Each round ends the program's session through the servers (a second handle with the session's id
and password, closed) and times, from there, until the node is there again on a new session (the
client notices the expiry, opens a new session and makes the node). Writes
bench/results/node-latest.json and prints a table. --quick (used by CI) runs 3 rounds, only to
prove that both programs still work (its figures go to BUILD/bench/node-quick.json)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import CURATOR_CP, ROOT, Server, run_json  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds = 3
    classes = tempfile.mkdtemp(prefix="zkr-node-bench-classes-")
    subprocess.run(["javac", "-d", classes, "-cp", CURATOR_CP, os.path.join(ROOT, "bench", "peers", "CuratorNodeBench.java")], check=True)
    server = Server(force_sync=False)
    try:
        result = run_json([os.path.join(a.build, "bench", "zkr_nodebench"), "--connect", server.connect, "--rounds", str(a.rounds),
                           "--curator-classpath", classes + ":" + CURATOR_CP], 600)
    finally:
        server.stop()
    print("\nA node back after its session expired, %d rounds (ms from the session's end to the node on a new one):" % a.rounds)
    print("| program | median | max |")
    print("| --- | ---: | ---: |")
    for name, r in result.items():
        print("| %s | %.1f | %.1f |" % (name, r["median_ms"], r["max_ms"]))
    out = os.path.join(a.build, "bench", "node-quick.json") if a.quick else os.path.join(ROOT, "bench", "results", "node-latest.json")
    with open(out, "w") as f:
        json.dump({"rounds": a.rounds, "programs": result}, f, indent=1)
    print("written to", out)


if __name__ == "__main__":
    main()
