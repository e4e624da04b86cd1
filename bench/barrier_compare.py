#!/usr/bin/python3
"""A double barrier's rounds: zkr's double_barrier beside Curator 5.4's DistributedDoubleBarrier,
five members in processes of their own, on one ZooKeeper server, in one run. Each member
(build/release/test/zkr_barrier_worker with no hold, or bench/peers/CuratorBarrierBench.java)
enters and leaves a barrier of its own path per round and logs each step with the monotonic clock.

    /usr/bin/python3 bench/barrier_compare.py [--build build/release] [--rounds 50] [--members 5] [--quick]

Per round (the first, which waits for every process to start, is not counted): the round time,
from the first member's enter to the last member's return from leave; and the enter's own cost,
from the last member's enter to the last member's return from it (everyone is in: what remains is
the barrier telling them). Writes bench/results/barrier-latest.json and prints a table. --quick
(used by CI) runs 3 rounds, only to prove that both programs still work (its figures go to
BUILD/bench/barrier-quick.json)."""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import CURATOR_CP, ROOT, Server  # noqa: E402


def run(argv_of, members, log):
    ps = [subprocess.Popen(argv_of(i)) for i in range(members)]
    for p in ps:
        if p.wait(timeout=600) != 0:
            raise RuntimeError("a member failed: " + " ".join(argv_of(0)))
    steps = collections.defaultdict(lambda: collections.defaultdict(list))  # round -> step -> [ns]
    for line in open(log):
        what, _pid, r, ns = line.split()[:4]
        steps[int(r)][what].append(int(ns))
    rounds, enters = [], []
    for r in sorted(steps)[1:]:
        s = steps[r]
        rounds.append((max(s["left"]) - min(s["entering"])) / 1e6)
        enters.append((max(s["entered"]) - max(s["entering"])) / 1e6)
    return {"round_median_ms": statistics.median(rounds), "round_max_ms": max(rounds), "enter_median_ms": statistics.median(enters),
            "round_ms": rounds, "enter_ms": enters}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds = 4
    classes = tempfile.mkdtemp(prefix="zkr-barrier-bench-classes-")
    subprocess.run(["javac", "-d", classes, "-cp", CURATOR_CP, os.path.join(ROOT, "bench", "peers", "CuratorBarrierBench.java")], check=True)
    worker = os.path.join(a.build, "test", "zkr_barrier_worker")
    server = Server(force_sync=False)
    result = {}
    try:
        for name, argv_of in [
            ("zkr double_barrier", lambda base, log: lambda i: [worker, server.connect, "10000", base, str(a.members), str(a.rounds), "0", log]),
            ("Curator DistributedDoubleBarrier", lambda base, log: lambda i: [
                "java", "-Xmx128m", "-cp", classes + ":" + CURATOR_CP, "CuratorBarrierBench", server.connect, base, str(a.members), str(a.rounds), log]),
        ]:
            fd, log = tempfile.mkstemp(prefix="zkr-barrier-bench-")
            os.close(fd)
            base = "/barrierbench-%d/%s" % (os.getpid(), "zkr" if name.startswith("zkr") else "curator")
            try:
                result[name] = run(argv_of(base, log), a.members, log)
            finally:
                os.remove(log)
    finally:
        server.stop()
    print("\nA double barrier of %d members, %d rounds (ms):" % (a.members, a.rounds - 1))
    print("| program | round, median | round, max | enter after the last arrives, median |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in result.items():
        print("| %s | %.2f | %.2f | %.2f |" % (name, r["round_median_ms"], r["round_max_ms"], r["enter_median_ms"]))
    out = os.path.join(a.build, "bench", "barrier-quick.json") if a.quick else os.path.join(ROOT, "bench", "results", "barrier-latest.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"members": a.members, "rounds": a.rounds, "programs": result}, f, indent=1)
    print("written to", out)


if __name__ == "__main__":
    main()
