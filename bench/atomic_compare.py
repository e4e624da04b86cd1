#!/usr/bin/python3
"""Atomic increments per second: zkr's distributed_atomic_long beside Curator 5.4's
DistributedAtomicLong, with 1 and 8 processes incrementing one value, on one ZooKeeper server, in
one run. Each program's processes (zkr: build/release/test/zkr_atomic_worker in its "bench" mode,
ephemeral receipts; Curator: test/peers/CuratorWorker.java's "atomiclong", compiled by the build
into build/release/test/curator-classes) connect first, then time their own increments; a run's
rate is its increments over its slowest process's time. Both promote to a lock after 10 tries.

    /usr/bin/python3 bench/atomic_compare.py [--build build/release] [--increments 500]

Writes bench/results/atomic-latest.json and prints a table."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import CURATOR_CP, ROOT, Server  # noqa: E402


def run(programs, log, procs):
    ps = [subprocess.Popen(p) for p in programs]
    for p in ps:
        if p.wait() != 0:
            raise RuntimeError("a worker failed: " + " ".join(programs[0]))
    lines = [l.split() for l in open(log).read().splitlines() if l.strip()]
    if len(lines) != procs:
        raise RuntimeError("expected %d DONE lines, got %d" % (procs, len(lines)))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--increments", type=int, default=500, help="per process")
    a = ap.parse_args()
    classes = os.path.join(a.build, "test", "curator-classes")
    worker = os.path.join(a.build, "test", "zkr_atomic_worker")
    server = Server(force_sync=False)
    results = []
    try:
        for procs in (1, 8):
            for program in ("zkr", "curator"):
                log = tempfile.mktemp(prefix="zkr-atomic-bench-")
                path = "/bench/atomic-%s-%d" % (program, procs)
                if program == "zkr":
                    cmd = [worker, server.connect, "10000", path, str(a.increments), log, "bench"]
                else:
                    cmd = ["java", "-Xmx256m", "-cp", classes + ":" + CURATOR_CP, "CuratorWorker", server.connect, "atomiclong", path,
                           str(a.increments), "0", log]
                lines = run([cmd] * procs, log, procs)
                os.remove(log)
                slowest_ms = max(int(l[-1]) for l in lines)
                total = procs * a.increments
                # zkr: done ok refused unknown errors promoted ms; Curator: DONE pid tries ms.
                extra = ("%d refused, %d promoted" % (sum(int(l[2]) for l in lines), sum(int(l[5]) for l in lines)) if program == "zkr"
                         else "%d tries" % sum(int(l[2]) for l in lines))
                results.append({"program": program, "processes": procs, "increments": total, "slowest_ms": slowest_ms,
                                "per_second": round(total * 1000.0 / max(slowest_ms, 1)), "notes": extra})
    finally:
        server.stop()
    print("\nAtomic increments, %d per process, one standalone server (forceSync=no):" % a.increments)
    print("| program | processes | increments/s | slowest process | notes |")
    print("| --- | ---: | ---: | ---: | --- |")
    for r in results:
        print("| %s | %d | %d | %d ms | %s |" % (r["program"], r["processes"], r["per_second"], r["slowest_ms"], r["notes"]))
    out = os.path.join(ROOT, "bench", "results", "atomic-latest.json")
    with open(out, "w") as f:
        json.dump({"increments_per_process": a.increments, "runs": results}, f, indent=1)
    print("written to", out)


if __name__ == "__main__":
    main()
