#!/usr/bin/env python3
"""Fails when a lower layer of the library includes a higher one.

The layers, lowest first (docs/architecture.md): a file may include headers of its own layer
and of the layers below it, never of one above. optim and data share a rank: neither needs the
other, and both sit between the models and the trainers.

Usage: tools/check_layers.py [REPO_ROOT]   (exit 0: clean; 1: each violation printed)
"""
import pathlib
import re
import sys

RANK = {
    "core": 0,
    "kernels": 1,
    "profile": 2,  # the zone recorder and the reports; it reads the machine's peak (kernels)
    "layers": 3,
    "models": 4,
    "optim": 5,
    "data": 5,
    "train": 6,
    "fleet": 7,
}
# Applications sit above the library: the library never includes them.
APPS = ("cli/", "bench/", "python/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path: pathlib.Path, root: pathlib.Path):
    parts = path.relative_to(root).parts
    if len(parts) >= 3 and parts[0] in ("src", "include") and parts[1] == "shoal":
        return parts[2]
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    bad = []
    files = sorted(list((root / "src" / "shoal").rglob("*.[ch]*")) +
                   list((root / "include" / "shoal").rglob("*.h")))
    for f in files:
        layer = layer_of(f, root)
        if layer not in RANK:
            bad.append(f"{f.relative_to(root)}: folder '{layer}' has no rank in tools/check_layers.py")
            continue
        for inc in INCLUDE.findall(f.read_text(encoding="utf-8")):
            if inc.startswith(APPS):
                bad.append(f"{f.relative_to(root)}: the library includes the application file {inc}")
                continue
            m = re.match(r"shoal/([a-z_]+)/", inc)
            if not m:
                continue
            target = m.group(1)
            if target not in RANK:
                bad.append(f"{f.relative_to(root)}: includes {inc} of unranked folder '{target}'")
            elif RANK[target] > RANK[layer]:
                bad.append(f"{f.relative_to(root)}: {layer} (rank {RANK[layer]}) includes {inc} "
                           f"({target}, rank {RANK[target]})")
    for b in bad:
        print(b)
    print(f"layering: {len(files)} files, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
