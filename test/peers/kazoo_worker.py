#!/usr/bin/python3
"""A Kazoo (Debian's python3-kazoo) process contending with zkr's on one path, for the interop
tests: the same log lines as zkr_lock_worker's mutex ("ACQ|REL <pid> 0 1"; Kazoo has no fencing
token: it logs 0), each appended with one write (O_APPEND), so the file order is a real-time order.
Its Lock counts zkr's nodes too (extra_lock_patterns, Kazoo 2.7.1 and later).

    python3 kazoo_worker.py CONNECT PATH ITERATIONS HOLD_MS LOG
"""
import os
import sys
import time

from kazoo.client import KazooClient


def line(log, text):
    os.write(log, (text + "\n").encode())


def main():
    connect, path, iterations, hold_ms, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    pid = os.getpid()
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=20)
    lock = client.Lock(path, "kazoo-%d" % pid, extra_lock_patterns=("-lock-",))
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for _ in range(iterations):
        lock.acquire()
        line(log, "ACQ %d 0 1" % pid)
        if hold_ms > 0:
            time.sleep(hold_ms / 1000)
        line(log, "REL %d 0 1" % pid)
        lock.release()
    os.close(log)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
