#!/usr/bin/env python3
"""Validate a Chrome Trace Event JSON file (as written by `shoal ... --profile trace`).

Checks, with the standard library only: strict JSON; an object with a traceEvents array; every
event has ph, name, pid, tid (and ts unless it is metadata); pid/tid are integers in [0, 2^31);
X events have cat and dur >= 0; per (pid, tid) the X events nest properly. With --max-bytes-per-event
it also checks the file's size per X event. Exit status 0 when valid, 1 otherwise.
"""
import argparse
import json
import sys


def validate(doc):
    errors = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["top level must be an object with a traceEvents array"], 0
    tracks = {}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"event {i}"
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            errors.append(f"{where}: missing ph")
            continue
        if not isinstance(e.get("name"), str):
            errors.append(f"{where}: missing name")
        ok = True
        for k in ("pid", "tid"):
            v = e.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**31:
                errors.append(f"{where}: {k} must be an integer in [0, 2^31)")
                ok = False
        if e["ph"] == "M":
            continue
        if not isinstance(e.get("ts"), (int, float)):
            errors.append(f"{where}: missing ts")
            continue
        if e["ph"] != "X":
            continue
        if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
            errors.append(f"{where}: X event needs dur >= 0")
            continue
        if not isinstance(e.get("cat"), str):
            errors.append(f"{where}: X event needs cat")
        if ok:
            b = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append((b, b + round(e["dur"] * 1000), i))
    n_x = 0
    for (pid, tid), evs in tracks.items():
        n_x += len(evs)
        evs.sort(key=lambda v: (v[0], -v[1]))
        stack = []
        for ev in evs:
            while stack and stack[-1][1] <= ev[0]:
                stack.pop()
            if stack and ev[1] > stack[-1][1]:
                errors.append(f"pid {pid} tid {tid}: event {ev[2]} overlaps event {stack[-1][2]} "
                              "without nesting")
            stack.append(ev)
    return errors, n_x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--max-bytes-per-event", type=float, default=0)
    args = ap.parse_args()
    with open(args.trace, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError as ex:
        print(f"{args.trace}: not valid JSON: {ex}")
        return 1
    errors, n_x = validate(doc)
    if args.max_bytes_per_event and n_x and len(raw) / n_x > args.max_bytes_per_event:
        errors.append(f"{len(raw) / n_x:.1f} bytes per X event > {args.max_bytes_per_event}")
    for e in errors[:20]:
        print(f"{args.trace}: {e}")
    if errors:
        return 1
    print(f"{args.trace}: valid ({n_x} X events, {len(raw)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
