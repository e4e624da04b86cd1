#!/usr/bin/python3
"""A Kazoo (Debian's python3-kazoo) TreeCache on a path, for the cache interop test: every 50 ms,
when its view changed, it writes the view to VIEW (a temporary file renamed over it, so a reader
never sees half of one): a first line "initialized" or "loading", then one line per node shown,
"PATH<TAB>VERSION<TAB>CZXID<TAB>DATA", sorted by path. It runs until it is killed.

    python3 kazoo_cache_worker.py CONNECT PATH VIEW
"""
import os
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent


def main():
    connect, path, view_path = sys.argv[1], sys.argv[2], sys.argv[3]
    client = KazooClient(hosts=connect, timeout=10)
    client.start(timeout=20)
    initialized = threading.Event()
    cache = TreeCache(client, path)

    @cache.listen
    def on_event(event):
        if event.event_type == TreeEvent.INITIALIZED:
            initialized.set()

    cache.start()

    def walk(node_path, lines):
        node = cache.get_data(node_path)
        if node is None:
            return
        lines.append("%s\t%d\t%d\t%s" % (node_path, node.stat.version, node.stat.czxid, (node.data or b"").decode()))
        for child in sorted(cache.get_children(node_path, default=()) or ()):
            walk(node_path.rstrip("/") + "/" + child, lines)

    last = None
    while True:
        lines = ["initialized" if initialized.is_set() else "loading"]
        try:
            walk(path, lines)
        except RuntimeError:  # the cache's thread changed a node's children while walked: again
            time.sleep(0.01)
            continue
        lines[1:] = sorted(lines[1:])
        text = "\n".join(lines) + "\n"
        if text != last:
            with open(view_path + ".tmp", "w") as f:
                f.write(text)
            os.rename(view_path + ".tmp", view_path)
            last = text
        time.sleep(0.05)


if __name__ == "__main__":
    main()
