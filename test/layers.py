#!/usr/bin/env python3
"""Fails if a source file includes from a layer above its own.

The layers, lowest first: the connection (src/), the recipes' core (recipes/core/: the
ZooKeeper vocabulary and engine), the queue of sequential nodes (recipes/queue/), then the
families (every other folder of recipes/), which never include each other. A recipe family may
include anything below it; nothing below may include a family.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer(path):
    """(rank, name) of a file under src/ or recipes/; None elsewhere."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "src":
        return (0, "src")
    if parts[0] != "recipes" or len(parts) < 3:
        return None
    folder = parts[1]
    return {"core": (1, "core"), "queue": (2, "queue")}.get(folder, (3, folder))


def main():
    files = [p for top in ("src", "recipes") for p in (ROOT / top).rglob("*") if p.suffix in (".hpp", ".cpp")]
    stray = [p for p in (ROOT / "recipes").iterdir() if p.is_file()]
    problems = [f"{p.relative_to(ROOT)}: a recipe file outside a layer's folder" for p in stray]
    for f in files:
        mine = layer(f)
        if mine is None:
            problems.append(f"{f.relative_to(ROOT)}: a file outside a layer's folder")
            continue
        for name in INCLUDE.findall(f.read_text()):
            target = (f.parent / name).resolve()
            if not target.exists():
                continue  # a header of the include path (zkr/..., a library)
            theirs = layer(target)
            if theirs is None:
                continue
            if theirs[0] > mine[0]:
                problems.append(f"{f.relative_to(ROOT)}: includes {name} ({theirs[1]}, a layer above {mine[1]})")
            elif theirs[0] == mine[0] == 3 and theirs != mine:
                problems.append(f"{f.relative_to(ROOT)}: includes {name} (another family, {theirs[1]})")
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
