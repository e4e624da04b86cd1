#!/usr/bin/python3
"""A/B of two zkr_lockbench binaries (say, main before and after a change) on one ZooKeeper server,
alternating in every round so that drift of the machine hits both alike; prints the medians.

    /usr/bin/python3 bench/ab.py BEFORE_LOCKBENCH AFTER_LOCKBENCH [--rounds 6] [--seconds 3]
                                 [--workloads w1,w2,w4,w7] [--placement shared|split] [--out ab.json]
                                 [--before-args "..."] [--after-args "--observer counting"]

The first round is dropped from the medians: the server's JIT is still warming up then. Build the
"before" binary from a worktree: git worktree add /tmp/base REV && cmake -S /tmp/base -B
/tmp/base/build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/base/build --target
zkr_lockbench."""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the server and the runner of compare.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", default="3")
    ap.add_argument("--workloads", default="w1,w2,w4,w7")
    ap.add_argument("--placement", choices=["shared", "split"], default="shared")  # as compare.py's
    ap.add_argument("--out", default=None)
    # Options of one side only ("--observer counting": what a set observer costs, same binary twice).
    ap.add_argument("--before-args", default="")
    ap.add_argument("--after-args", default="")
    a = ap.parse_args()
    split = a.placement == "split"
    server = compare.Server(False, ["taskset", "-c", "0"] if split else [])
    pin = ["taskset", "-c", "1"] if split else []
    runs = {}
    try:
        for r in range(a.rounds):
            pair = [("before", [a.before] + a.before_args.split()), ("after", [a.after] + a.after_args.split())]
            if r % 2:
                pair.reverse()
            for w in a.workloads.split(","):
                for name, exe in pair:
                    out = compare.run_json(pin + exe + ["--connect", server.connect, "--workload", w, "--seconds", a.seconds,
                                            "--warmup", "1", "--json"], 300)
                    runs.setdefault(w, {}).setdefault(name, []).append(out)
                    print("round %d %s %s: %.0f/s" % (r, w, name, out["rate"]), flush=True)
    finally:
        server.stop()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(runs, f)
    for w, d in runs.items():
        med = {k: statistics.median(x["rate"] for x in v[1:] or v) for k, v in d.items()}
        cpu = {k: statistics.median(x["cpu_ms_per_1000_cycles"] for x in v[1:] or v) for k, v in d.items()}
        req = {k: statistics.median(x["requests_per_cycle"] for x in v[1:] or v) for k, v in d.items()}
        print("%s: %.0f -> %.0f /s (%+.1f%%); requests per cycle %.2f -> %.2f; CPU ms per 1000 cycles %.0f -> %.0f"
              % (w, med["before"], med["after"], 100 * (med["after"] - med["before"]) / med["before"], req["before"],
                 req["after"], cpu["before"], cpu["after"]))


if __name__ == "__main__":
    main()
