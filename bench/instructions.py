#!/usr/bin/python3
"""Instructions per lock cycle of the zkr client process, counted by valgrind's callgrind: the
same binary and inputs give nearly the same count whatever else the machine is doing, where a
rate on this 2-core machine swings by 25% from round to round. Each variant runs twice (2 s and
6 s); the slope between the two runs is the cost of one cycle, without start-up and warm-up.

    /usr/bin/python3 bench/instructions.py LOCKBENCH[:OPTIONS] ... [--workload w1] [--repeat 2]

Each LOCKBENCH may carry its own options after a colon: "build/release/bench/zkr_lockbench:--observer
counting". The spin of blocking calls is off (its instruction count depends on timing), and
each run starts its own server (not counted: callgrind follows only the client)."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(exe, args, workload, seconds):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "callgrind.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe, "--workload", workload,
                            "--seconds", str(seconds), "--warmup", "0.5", "--blocking-call-spin-us", "0", "--json"] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=True)
        cycles = json.loads(p.stdout.strip().splitlines()[-1])["cycles"]
        with open(out) as f:
            total = next(int(m.group(1)) for m in (re.match(r"(?:summary|totals): (\d+)", l) for l in f) if m)
        return cycles, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--workload", default="w1")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    for spec in a.binaries:
        exe, _, extra = spec.partition(":")
        slopes = []
        for _ in range(a.repeat):
            c1, i1 = run(exe, extra.split(), a.workload, 2)
            c2, i2 = run(exe, extra.split(), a.workload, 6)
            slopes.append((i2 - i1) / max(1, c2 - c1))
        print("%s %s: %s instructions per cycle (runs: %s)" % (spec, a.workload, "{:,.0f}".format(sum(slopes) / len(slopes)),
                                                              ", ".join("{:,.0f}".format(s) for s in slopes)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
