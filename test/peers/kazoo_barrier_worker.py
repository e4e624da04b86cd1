#!/usr/bin/python3
"""A Kazoo (Debian's python3-kazoo) Barrier on PATH, for the barrier interop test, logging as
CuratorWorker's barrier-wait and barrier-set do, each line appended with one write (O_APPEND):
  wait: logs "WAITING <pid>", waits on the barrier (untimed), logs "PASSED <pid>";
  set: sets the barrier, logs "SET <pid>", sleeps HOLD_MS, logs "REMOVING <pid>", removes it.

    python3 kazoo_barrier_worker.py CONNECT wait|set PATH HOLD_MS LOG
"""
import os
import sys
import time

from kazoo.client import KazooClient


def line(log, text):
    os.write(log, (text + "\n").encode())


def main():
    connect, mode, path, hold_ms, log_path = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    pid = os.getpid()
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=20)
    barrier = client.Barrier(path)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    if mode == "wait":
        line(log, "WAITING %d" % pid)
        barrier.wait()
        line(log, "PASSED %d" % pid)
    else:
        barrier.create()
        line(log, "SET %d" % pid)
        time.sleep(hold_ms / 1000)
        line(log, "REMOVING %d" % pid)
        barrier.remove()
    os.close(log)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
