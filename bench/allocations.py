#!/usr/bin/python3
"""Heap allocations per operation of the zkr client process (issue 48), counted exactly by the
benchmark's replaced operator new (bench/allocation_count.cpp): W0 per read and per create+delete,
W1 (one session, uncontended mutex), W2 (8 sessions, one mutex) and W8 (8 sessions, a read-write
lock) per lock cycle. Unlike a rate, the count hardly moves with the machine's load.

    /usr/bin/python3 bench/allocations.py LOCKBENCH [--seconds 2] [--workloads w0,w1,w2,w8] [--max-w1 N]

--max-w1 N fails (exit 1) when W1 allocates more than N times per lock cycle: CI's guard that an
allocation taken out of the lock's path stays out (lower N with each one). What runs beside the
lock (the session's pings, the benchmark's own vectors) adds a few allocations per second, spread
over the cycles of that second: on a loaded machine, with a tenth of the cycles, the count rises
by a fraction of one (115.0 idle, 115.5 beside two busy loops), so N leaves room for that."""
import argparse
import json
import subprocess
import sys

WORKLOADS = [("w0", "read"), ("w0", "create_delete"), ("w1", "cycle"), ("w2", "cycle"), ("w8", "cycle")]


def run(exe, workload, seconds):
    p = subprocess.run([exe, "--workload", workload, "--seconds", str(seconds), "--warmup", "0.5", "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("allocations.py: %s --workload %s failed (%d):\n%s" % (exe, workload, p.returncode, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lockbench")
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--workloads", default="w0,w1,w2,w8")
    ap.add_argument("--max-w1", type=float)
    a = ap.parse_args()
    wanted = a.workloads.split(",")
    if a.max_w1 is not None and "w1" not in wanted:
        sys.exit("allocations.py: --max-w1 needs w1 among --workloads")
    runs = {}
    w1 = None
    for workload, per in WORKLOADS:
        if workload not in wanted:
            continue
        if workload not in runs:
            runs[workload] = run(a.lockbench, workload, a.seconds)
        r = runs[workload]
        allocations, frees = r["allocations_per_" + per], r["frees_per_" + per]
        rate = r["create_delete_per_s"] if per == "create_delete" else r["rate"]
        print("%-4s per %-14s %7.1f allocations, %7.1f frees  (%d per second)" % (workload, per, allocations, frees, rate),
              flush=True)
        if workload == "w1":
            w1 = allocations
    if a.max_w1 is not None and w1 > a.max_w1:
        print("allocations.py: W1 allocates %.1f times per lock cycle, above the ceiling of %g" % (w1, a.max_w1))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
