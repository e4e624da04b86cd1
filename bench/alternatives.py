#!/usr/bin/python3
"""zkr against the alternatives a team weighs for a cross-process lock: etcd 3.4's lock service and
PostgreSQL 15's advisory locks, side by side on this machine (issue 26; docs/choosing.md shows
the figures). Not part of the test suite: run it by hand.

    /usr/bin/python3 bench/alternatives.py [--build build/release] [--seconds 3] [--clients 4]
                                           [--rounds 3] [--only speed|faults]

Needs the Debian packages etcd-server, etcd-client, postgresql and python3-psycopg2 (it says which
are missing), and zkr built (scripts/run build). Runs as root or as a user; PostgreSQL's server
runs as the user `postgres` when started by root.

Every server is started here, on loopback, its data in a temporary folder, none syncing to disk
(ZooKeeper forceSync=no, etcd's data on /dev/shm, PostgreSQL fsync=off): the figures compare the
protocols and clients, not the disks.

Speed (medians of --rounds alternating rounds):
  - uncontended: one client, lock and release in a loop;
  - contended: --clients processes (zkr: sessions) on one lock;
  - handoff: from a holder's release call to the next holder's acquire returning, in the contended runs.
  zkr's figures come from zkr_lockbench (C++, sync release); etcd's and PostgreSQL's from a Python
  client in this file (etcd through its JSON gateway, /v3/lock; PostgreSQL through psycopg2).

Faults (each once; the holder runs a command that prints a line every 100 ms while it holds):
  - pause: the holder's processes are stopped (SIGSTOP) for 8 s, past its 4 s session/lease;
  - drop 2 s / drop 8 s: the holder's connection is cut by a proxy, and new ones refused, for 2 s
    (within the session/lease) or 8 s (past it).
  For each: when a waiter got the lock after the fault began, and for how long the old holder's
  command went on running once the waiter held (two holders at once). zkr: `zkr lock`; etcd:
  `etcdctl lock --ttl 4`; PostgreSQL: a Python holder (pg_advisory_lock) that checks its
  connection every 100 ms.
"""
import argparse
import base64
import http.client
import json
import os
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, Server, free_port, run_json  # noqa: E402  (one ZooKeeper launcher)

PG_BIN = "/usr/lib/postgresql/15/bin"
SESSION_S = 4  # zkr's session timeout and etcd's lease TTL in the fault runs
PACKAGES = {"etcd-server": "/usr/bin/etcd", "etcd-client": "/usr/bin/etcdctl", "postgresql": PG_BIN + "/postgres",
            "python3-psycopg2": None}


# ---- servers ------------------------------------------------------------------------------------

class Etcd:
    """One etcd 3.4 member on loopback, its data on /dev/shm."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="zkr-alt-etcd-", dir="/dev/shm")
        self.port, peer = free_port(), free_port()
        self.endpoint = "127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "etcd.log"), "w")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "alt", "--data-dir", self.dir + "/data",
             "--listen-client-urls", "http://" + self.endpoint, "--advertise-client-urls", "http://" + self.endpoint,
             "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-cluster", "alt=http://127.0.0.1:%d" % peer],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: etcd_call(self.endpoint, "/v3/maintenance/status", {}) is not None, "etcd", self.dir)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Postgres:
    """One PostgreSQL 15 cluster on loopback, fsync off, trust authentication."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="zkr-alt-pg-", dir="/dev/shm")
        self.port = free_port()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.dir, "postgres")
        subprocess.run(self.as_user + [PG_BIN + "/initdb", "-D", self.dir + "/data", "-U", "postgres", "--auth=trust"],
                       check=True, capture_output=True)
        self.log = open(os.path.join(self.dir, "postgres.log"), "w")
        self.proc = subprocess.Popen(
            self.as_user + [PG_BIN + "/postgres", "-D", self.dir + "/data", "-p", str(self.port), "-k", self.dir,
                            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                            "-c", "max_connections=200"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = "127.0.0.1:%d" % self.port
        wait_until(lambda: pg_connect(self.endpoint, quiet=True) is not None, "PostgreSQL", self.dir)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_until(ready, what, folder, seconds=60):
    deadline = time.time() + seconds
    while not ready():
        if time.time() > deadline:
            raise RuntimeError("%s did not start; see %s" % (what, folder))
        time.sleep(0.2)


# ---- clients ------------------------------------------------------------------------------------

def b64(text):
    return base64.b64encode(text.encode()).decode()


def etcd_call(endpoint, path, body, conn=None):
    """One request to etcd's JSON gateway; None when the server cannot be reached."""
    own = conn is None
    try:
        conn = conn or http.client.HTTPConnection(endpoint, timeout=30)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        reply = json.loads(conn.getresponse().read() or b"{}")
        return reply
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        if own and conn:
            conn.close()


class EtcdLock:
    """etcd's lock service (v3lock, what etcdctl lock and clientv3/concurrency use): a lease per
    client, then Lock(name, lease) and Unlock(key): two round trips per cycle."""

    def __init__(self, endpoint, ttl=60):
        self.conn = http.client.HTTPConnection(endpoint, timeout=60)
        self.lease = etcd_call(endpoint, "/v3/lease/grant", {"TTL": ttl}, self.conn)["ID"]

    def lock(self, name):
        reply = etcd_call(None, "/v3/lock/lock", {"name": b64(name), "lease": self.lease}, self.conn)
        return reply["key"]

    def unlock(self, key):
        etcd_call(None, "/v3/lock/unlock", {"key": key}, self.conn)


def pg_connect(endpoint, quiet=False):
    import psycopg2
    host, port = endpoint.split(":")
    try:
        conn = psycopg2.connect(host=host, port=int(port), user="postgres", dbname="postgres", connect_timeout=5)
    except psycopg2.OperationalError:
        if quiet:
            return None
        raise
    conn.autocommit = True
    return conn


class PgLock:
    """A session-level advisory lock: pg_advisory_lock, then pg_advisory_unlock: two round trips."""

    def __init__(self, endpoint):
        self.cur = pg_connect(endpoint).cursor()

    def lock(self, name):
        self.cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
        return name

    def unlock(self, key):
        self.cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


def client_main(a):
    """One contending client process: lock and release until the deadline, then its events."""
    lock = EtcdLock(a.endpoint) if a.client == "etcd" else PgLock(a.endpoint)
    print("ready", flush=True)
    start = float(sys.stdin.readline())  # every client starts at once
    while time.monotonic() < start:
        time.sleep(0.001)
    events, end = [], start + a.seconds
    while time.monotonic() < end:
        key = lock.lock(a.name)
        acquired = time.monotonic()
        released = time.monotonic()
        lock.unlock(key)
        events.append((acquired, released))
    print(json.dumps(events), flush=True)


def run_clients(system, endpoint, clients, seconds):
    name = "alt-%d" % time.monotonic_ns()
    procs = [subprocess.Popen([sys.executable, __file__, "--client", system, "--endpoint", endpoint, "--name", name,
                               "--seconds", str(seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(clients)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("a %s client did not start" % system)
    start = time.monotonic() + 0.2
    for p in procs:
        p.stdin.write("%f\n" % start)
        p.stdin.flush()
    per_client = [json.loads(p.communicate(timeout=seconds + 60)[0].strip().splitlines()[-1]) for p in procs]
    cycles = sum(len(e) for e in per_client)
    # Handoffs: each acquire that follows another client's release, from that release call.
    timeline = sorted((t, kind, c) for c, events in enumerate(per_client) for acq, rel in events
                      for t, kind in ((acq, "acq"), (rel, "rel")))
    handoffs, last_release = [], None
    for t, kind, c in timeline:
        if kind == "rel":
            last_release = (t, c)
        elif last_release and last_release[1] != c:
            handoffs.append((t - last_release[0]) * 1e6)
            last_release = None
    return {"rate": cycles / seconds, "handoff_p50_us": pct(handoffs, 0.5), "handoff_p99_us": pct(handoffs, 0.99)}


def pct(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# ---- speed --------------------------------------------------------------------------------------

def speed(a, zk, etcd, pg):
    lockbench = os.path.join(a.build, "bench", "zkr_lockbench")
    runs = {}
    for r in range(-1, a.rounds):  # round -1 warms every server up (ZooKeeper's JIT above all) and is not counted
        for system in ["zkr", "etcd", "postgres"]:
            if system == "zkr":
                base = [lockbench, "--connect", zk.connect, "--seconds", str(a.seconds), "--json"]
                one = run_json(base + ["--workload", "w1"], a.seconds + 120)
                many = run_json(base + ["--workload", "w2", "--clients", str(a.clients)], a.seconds + 120)
            else:
                endpoint = etcd.endpoint if system == "etcd" else pg.endpoint
                one = run_clients(system, endpoint, 1, a.seconds)
                many = run_clients(system, endpoint, a.clients, a.seconds)
            if r < 0:
                continue
            row = runs.setdefault(system, {"uncontended": [], "contended": [], "handoff_p50_us": [], "handoff_p99_us": []})
            row["uncontended"].append(one["rate"])
            row["contended"].append(many["rate"])
            row["handoff_p50_us"].append(many["handoff_p50_us"])
            row["handoff_p99_us"].append(many["handoff_p99_us"])
            print("round %d %-8s uncontended %7.0f/s  contended %7.0f/s  handoff p50 %6.0f us  p99 %6.0f us"
                  % (r + 1, system, one["rate"], many["rate"], many["handoff_p50_us"], many["handoff_p99_us"]), flush=True)
    return {s: {k: statistics.median(v) for k, v in row.items()} for s, row in runs.items()}


# ---- faults -------------------------------------------------------------------------------------

class Proxy:
    """A TCP proxy in front of one server: cut() closes every connection through it and refuses new
    ones for a while (a dropped network path, seen from the holder)."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.endpoint = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.refuse_until = 0.0
        self.pairs = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.refuse_until:
                down.close()
                continue
            host, port = self.target.split(":")
            try:
                up = socket.create_connection((host, int(port)))
            except OSError:
                down.close()
                continue
            with self.lock:
                self.pairs.append((down, up))
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, seconds):
        self.refuse_until = time.monotonic() + seconds
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass

    def close(self):
        self.listener.close()
        self.cut(0)


WORK = "echo ACQUIRED; while :; do echo WORKING; sleep 0.1; done"


def pg_holder_main(a):
    """The PostgreSQL holder: takes the advisory lock, then works while its connection answers."""
    conn = pg_connect(a.endpoint)
    cur = conn.cursor()
    cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (a.name,))
    print("ACQUIRED", flush=True)
    while True:
        try:
            cur.execute("SELECT 1")
        except Exception:  # the connection is gone, and with it the lock: stop working
            print("LOST", flush=True)
            return
        print("WORKING", flush=True)
        time.sleep(0.1)


def holder_command(system, endpoint, name):
    if system == "zkr":
        zkr = os.path.join(ROOT_BUILD[0], "cli", "zkr")
        return [zkr, "lock", "--connect", endpoint, "--session-timeout", str(SESSION_S), "--grace", "1", "/alt/" + name,
                "--", "sh", "-c", WORK]
    if system == "etcd":
        return ["etcdctl", "--endpoints", endpoint, "lock", "--ttl", str(SESSION_S), name, "--", "sh", "-c", WORK]
    return [sys.executable, __file__, "--pg-holder", "--endpoint", endpoint, "--name", name]


def waiter_command(system, endpoint, name):
    if system == "zkr":
        zkr = os.path.join(ROOT_BUILD[0], "cli", "zkr")
        return [zkr, "lock", "--connect", endpoint, "-w", "60", "/alt/" + name, "--", "echo", "ACQUIRED"]
    if system == "etcd":
        return ["etcdctl", "--endpoints", endpoint, "lock", "--ttl", str(SESSION_S), name, "--", "echo", "ACQUIRED"]
    return [sys.executable, __file__, "--pg-holder", "--endpoint", endpoint, "--name", name, "--once"]


ROOT_BUILD = [os.path.join(ROOT, "build", "release")]


class Watched:
    """A child whose output lines are stamped with the time they arrive here."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True, env=dict(os.environ, ETCDCTL_API="3"))
        self.lines = []
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.strip()))

    def first(self, text):
        return next((t for t, line in self.lines if line == text), None)

    def last(self, text):
        return next((t for t, line in reversed(self.lines) if line == text), None)

    def tree(self):
        """This child and every process below it (zkr lock's command runs in a group of its own)."""
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as f:
                        parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    pass
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += [p for p, parent in parents.items() if parent == pid]
        return found

    def signal_tree(self, sig):
        for pid in self.tree():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def stop(self):
        self.signal_tree(signal.SIGKILL)
        self.proc.wait()


def fault_run(system, server_endpoint, fault, seconds):
    name = "alt-fault-%d" % time.monotonic_ns()
    proxy = Proxy(server_endpoint)
    holder = Watched(holder_command(system, proxy.endpoint, name))
    wait_until(lambda: holder.first("ACQUIRED") is not None, system + " holder", "-", 30)
    waiter = Watched(waiter_command(system, server_endpoint, name))
    time.sleep(1.5)  # the waiter is queued
    began = time.monotonic()
    if fault == "pause":
        holder.signal_tree(signal.SIGSTOP)
        time.sleep(seconds)
        holder.signal_tree(signal.SIGCONT)
    else:
        proxy.cut(seconds)
        time.sleep(seconds)
    # From here on (and, for a drop, from the start) the old holder runs again.
    running_again = time.monotonic() if fault == "pause" else began
    time.sleep(4)
    waiter_at = waiter.first("ACQUIRED")
    holder_last = holder.last("WORKING")
    overlap = 0.0
    if waiter_at is not None and holder_last is not None:
        overlap = max(0.0, holder_last - max(waiter_at, running_again))
    result = {
        "waiter_after_s": None if waiter_at is None else round(waiter_at - began, 2),
        # The old holder's command working (not paused) after the waiter got the lock: two holders.
        "overlap_s": round(overlap, 2),
        "holder_still_working": holder.proc.poll() is None and holder_last is not None and holder_last > time.monotonic() - 0.5,
    }
    # When it stopped working, if it did (its last line, from the fault's start).
    result["holder_stopped_after_s"] = None if result["holder_still_working"] or holder_last is None else round(holder_last - began, 2)
    holder.stop()
    waiter.stop()
    proxy.close()
    return result


def faults(a, zk, etcd, pg):
    results = {}
    for fault, seconds in [("pause", 8), ("drop", 2), ("drop", 8)]:
        for system, endpoint in [("zkr", zk.connect), ("etcd", etcd.endpoint), ("postgres", pg.endpoint)]:
            r = fault_run(system, endpoint, fault, seconds)
            results.setdefault("%s %d s" % (fault, seconds), {})[system] = r
            print("%-10s %-8s waiter got the lock after %s; the old holder worked on beside it for %s s; still working at the end: %s"
                  % ("%s %ds" % (fault, seconds), system,
                     "never" if r["waiter_after_s"] is None else "%.2f s" % r["waiter_after_s"], r["overlap_s"],
                     r["holder_still_working"]), flush=True)
    return results


# ---- main ---------------------------------------------------------------------------------------

def missing_packages():
    missing = []
    for package, path in PACKAGES.items():
        if path and not os.path.exists(path):
            missing.append(package)
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        missing.append("python3-psycopg2")
    return missing


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", choices=["speed", "faults"])
    # The child roles of this script.
    p.add_argument("--client", choices=["etcd", "postgres"], help=argparse.SUPPRESS)
    p.add_argument("--pg-holder", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--endpoint", help=argparse.SUPPRESS)
    p.add_argument("--name", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.client:
        return client_main(a)
    if a.pg_holder:
        if a.once:
            cur = pg_connect(a.endpoint).cursor()
            cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (a.name,))
            print("ACQUIRED", flush=True)
            return
        return pg_holder_main(a)
    missing = missing_packages()
    if missing:
        sys.exit("bench/alternatives.py needs: apt-get install " + " ".join(missing))
    ROOT_BUILD[0] = a.build
    if not os.path.exists(os.path.join(a.build, "bench", "zkr_lockbench")):
        sys.exit("build zkr first: bash scripts/run build")
    zk, etcd, pg = Server(force_sync=False), Etcd(), Postgres()
    try:
        print("ZooKeeper %s, etcd %s, PostgreSQL %s; %s" % (zk.connect, etcd.endpoint, pg.endpoint,
                                                            open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": ")),
              flush=True)
        out = {}
        if a.only != "faults":
            out["speed"] = speed(a, zk, etcd, pg)
        if a.only != "speed":
            out["faults"] = faults(a, zk, etcd, pg)
        print(json.dumps(out, indent=1))
    finally:
        zk.stop()
        etcd.stop()
        pg.stop()


if __name__ == "__main__":
    main()
