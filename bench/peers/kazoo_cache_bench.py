#!/usr/bin/python3
"""zkr_cachebench's Kazoo driver: the same figures with Kazoo's TreeCache (Debian's python3-kazoo),
on a tree zkr_cachebench made (/cachebench, which must exist). Prints one JSON object: the
bootstrap (start until initialized), the process's resident memory per cached node, and the
latency of one change (a set on another session until the listener runs), CHANGES times, one at
a time.

    python3 kazoo_cache_bench.py CONNECT CHANGES
"""
import json
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

ROOT = "/cachebench"


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def all_paths(client, path, out):
    out.append(path)
    for child in client.get_children(path):
        all_paths(client, path + "/" + child, out)


def pct(values, p):
    return values[int(p * (len(values) - 1))]


def main():
    connect, changes = sys.argv[1], int(sys.argv[2])
    reader, writer = KazooClient(hosts=connect, timeout=10), KazooClient(hosts=connect, timeout=10)
    reader.start(timeout=20)
    writer.start(timeout=20)
    paths = []
    all_paths(writer, ROOT, paths)

    initialized = threading.Event()
    state = {"awaited": None, "heard": None, "heard_at": None, "shown": 0}

    def on_event(event):
        if event.event_type == TreeEvent.INITIALIZED:
            initialized.set()
        elif event.event_type == TreeEvent.NODE_ADDED:
            state["shown"] += 1
        elif event.event_type == TreeEvent.NODE_UPDATED and event.event_data.path == state["awaited"] and state["heard_at"] is None:
            state["heard_at"] = time.monotonic()
            state["heard"].set()

    rss_before = rss_bytes()
    cache = TreeCache(reader, ROOT)
    cache.listen(on_event)
    t0 = time.monotonic()
    cache.start()
    if not initialized.wait(120):
        sys.exit("not initialized")
    bootstrap_ms = (time.monotonic() - t0) * 1000
    rss_after = rss_bytes()

    latencies = []
    for i in range(changes):
        path = paths[i * 7919 % len(paths)]
        state["heard"], state["heard_at"], state["awaited"] = threading.Event(), None, path
        sent = time.monotonic()
        writer.set(path, str(i).encode())
        if not state["heard"].wait(5):
            sys.exit("a change never came")
        latencies.append((state["heard_at"] - sent) * 1e6)
    latencies.sort()
    cache.close()
    for c in (reader, writer):
        c.stop()
        c.close()
    shown = max(state["shown"], 1)
    print(json.dumps({"nodes": len(paths), "shown": state["shown"], "bootstrap_ms": round(bootstrap_ms, 1),
                      "nodes_per_s": round(state["shown"] / (bootstrap_ms / 1000)),
                      "rss_bytes_per_node": round((rss_after - rss_before) / shown),
                      "change_latency_us": {"p50": round(pct(latencies, 0.5)), "p90": round(pct(latencies, 0.9)),
                                            "p99": round(pct(latencies, 0.99))}}))


if __name__ == "__main__":
    main()
