#!/usr/bin/python3
"""lockbench's Kazoo driver: the same workloads as zkr_lockbench, with Kazoo 2.8's recipes, on the
same server. Prints one JSON object.
    /usr/bin/python3 kazoo_bench.py CONNECT WORKLOAD CLIENTS SECONDS [WARMUP]
Workloads: w1/w2/w3/w6 Lock, w4 Semaphore (3 leases), w5 Semaphore (1 lease: Kazoo has no
semaphore mutex), w8 ReadLock/WriteLock (every tenth cycle of a client writes, the clients starting
at different points of the ten). Kazoo 2.8's ReadLock/WriteLock deadlock under contention
(python-zk/kazoo#649): compare.py leaves W8 out for Kazoo. Each client is its own KazooClient (its own session), on its own thread."""
import json
import os
import resource
import socket
import sys
import threading
import time

from kazoo.client import KazooClient


def server_received(connect):
    host, port = connect.split(",")[0].split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"srvr")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    for line in data.decode().splitlines():
        if line.startswith("Received: "):
            return int(line.split(":")[1])
    return -1


class ReadWrite:
    offsets = iter(range(1 << 30))

    def __init__(self, client, path):
        self.read, self.write = client.ReadLock(path), client.WriteLock(path)
        self.cycle = next(ReadWrite.offsets)
        self.held = None

    def acquire(self):
        self.cycle += 1
        self.held = self.write if self.cycle % 10 == 0 else self.read
        self.held.acquire()

    def release(self):
        self.held.release()


def recipe(workload, client, path):
    if workload == "w8":
        return ReadWrite(client, path)
    if workload == "w4":
        return client.Semaphore(path, max_leases=3)
    if workload == "w5":
        return client.Semaphore(path, max_leases=1)
    return client.Lock(path)


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[int(p * (len(v) - 1))]


def main():
    connect, workload, clients, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    warmup = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
    path = "/lockbench-kazoo/%s-%d" % (workload, os.getpid())
    sessions = []
    for _ in range(clients):
        c = KazooClient(hosts=connect, timeout=10.0)
        c.start(timeout=20)
        sessions.append(c)
    w = recipe(workload, sessions[0], path)
    until = time.monotonic() + warmup
    while time.monotonic() < until:
        w.acquire()
        w.release()
    state = {"release_started": 0.0, "stop": False}
    acquire, handoff, per_client = [], [], [0] * clients
    lock = threading.Lock()

    def run(i):
        r = recipe(workload, sessions[i], path)
        acq, hand = [], []
        while not state["stop"]:
            t0 = time.monotonic()
            r.acquire()
            t1 = time.monotonic()
            acq.append((t1 - t0) * 1e6)
            rel = state["release_started"]
            if clients > 1 and rel > t0:
                hand.append((t1 - rel) * 1e6)
            state["release_started"] = time.monotonic()
            r.release()
            per_client[i] += 1
        with lock:
            acquire.extend(acq)
            handoff.extend(hand)

    received0 = server_received(connect)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    state["stop"] = True
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    received = server_received(connect) - received0
    cycles = len(acquire)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    print(json.dumps({
        "program": "kazoo", "workload": workload, "clients": clients, "seconds": elapsed, "cycles": cycles,
        "rate": cycles / elapsed, "acquire_p50_us": pct(acquire, 0.5), "acquire_p99_us": pct(acquire, 0.99),
        "handoff_p50_us": pct(handoff, 0.5), "handoff_p99_us": pct(handoff, 0.99),
        "server_requests_per_cycle": received / cycles if cycles else 0,
        "cpu_ms_per_1000_cycles": cpu * 1000 / cycles * 1000 if cycles else 0,
        "min_per_client": min(per_client), "max_per_client": max(per_client)}))
    for c in sessions:
        c.stop()
        c.close()


if __name__ == "__main__":
    main()
