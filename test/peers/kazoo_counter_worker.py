#!/usr/bin/python3
"""A Kazoo (Debian's python3-kazoo) Counter on PATH in Curator's format (support_curator=True),
for the count interop test: incremented ITERATIONS times (Kazoo's own compare-and-set, retried),
then logs "DONE <pid> <value>" with one write (O_APPEND).

    python3 kazoo_counter_worker.py CONNECT PATH ITERATIONS LOG
"""
import os
import sys

from kazoo.client import KazooClient


def main():
    connect, path, iterations, log_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=20)
    counter = client.Counter(path, support_curator=True)
    for _ in range(iterations):
        counter += 1
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(log, ("DONE %d %d\n" % (os.getpid(), counter.value)).encode())
    os.close(log)
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
