"""shoal.profile(): the profiler from Python, as a context manager in torch.profiler's manner.

    with shoal.profile("trace", out="prof") as prof:
        model.fit(train_df)
    print(prof.table())          # per zone: time, calls, FLOPs, GFLOP/s, % of the machine's peak
    prof.zones()                 # the same as a DataFrame
    prof.runs[0]["trace"]        # prof/ncf.pt.trace.json: open in https://ui.perfetto.dev
    prof.advice()                # ranked advice with its evidence (rules: docs/profiler.md)
    prof.memory()                # the arena per layer and region
    prof_b.diff(prof_a)          # as `shoal profile diff A B`: per phase and zone, by |delta|

Every fit run inside the context (NCF.fit, NeuralForecast.fit, also per series) is profiled by
the C++ recorder, the one behind the CLI's --profile (docs/profiler.md): its training steps are
profiler steps, and it writes <out>/<name>.{pt.trace.json (trace mode), report.html,
summary.json}. Fits outside a context are not profiled and pay nothing.
"""

from __future__ import annotations

import json

import pandas as pd

_active: list["profile"] = []


class profile:
    """Profiles the fits run inside the context. mode: "stats" (per-zone table, HTML report,
    JSON summary) or "trace" (also a Perfetto / Chrome trace). out: directory for the files.
    rows: rows of the table. models: per-series fits with a trace process of their own."""

    def __init__(self, mode="stats", out="shoal-profile", rows=25, models=8, gzip=False):
        if mode not in ("stats", "trace"):
            raise ValueError(f"mode must be 'stats' or 'trace', got {mode!r}")
        if int(rows) < 1 or int(models) < 1:
            raise ValueError("rows and models must be ≥ 1")
        self.mode, self.out, self.rows, self.models = mode, str(out), int(rows), int(models)
        self.gzip = bool(gzip)  # the trace as <name>.pt.trace.json.gz
        from . import _core

        _core.check_output_folder(self.out, "out")  # not a file; refused before any fit
        self.runs: list[dict] = []  # one per profiled fit: name, table, trace, report, summary

    def __enter__(self):
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)
        return False

    def table(self) -> str:
        """The end-of-run tables of the profiled fits, as the CLI prints them."""
        return "\n".join(f"== {r['name']}\n{r['table']}" for r in self.runs)

    def zones(self) -> pd.DataFrame:
        """One row per zone and fit: name, category, calls, self/total ms, avg/p99 µs, FLOPs,
        bytes, GFLOP/s, peak_fraction (of the measured single-core peak), GB/s, bound."""
        frames = []
        for r in self.runs:
            with open(r["summary"]) as f:
                z = pd.DataFrame(json.load(f)["zones"])
            z.insert(0, "fit", r["name"])
            frames.append(z)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def summary(self, run=0) -> dict:
        """The summary JSON of one profiled fit (index or name)."""
        return _load(self._run(run)["summary"])

    def advice(self, run=0) -> pd.DataFrame:
        """The ranked advice of one fit: rule, score, advice, evidence."""
        return pd.DataFrame(self.summary(run)["advice"],
                            columns=["rule", "score", "advice", "evidence"])

    def memory(self, run=0) -> pd.DataFrame:
        """The arena plan of one fit: one row per model and layer, bytes per region."""
        rows = []
        for m in self.summary(run).get("memory", []):
            for layer in m["layers"]:
                rows.append({"model": m["model"], "layer": layer["name"], **layer["bytes"]})
        return pd.DataFrame(rows)

    def diff(self, baseline, run=0) -> pd.DataFrame:
        """This context's fit compared with `baseline`'s (a profile, or a summary path), as
        `shoal profile diff BASELINE THIS`: the step first, then phases and zones by |delta|, in µs
        per recorded step. df.attrs["machine_note"] says when the machines differ."""
        a = _load(baseline) if isinstance(baseline, str) else baseline.summary(run)
        return diff_summaries(a, self.summary(run))

    def _run(self, run):
        if isinstance(run, str):
            for r in self.runs:
                if r["name"] == run:
                    return r
            raise KeyError(f"no profiled fit named {run!r}")
        if not self.runs:
            raise ValueError("no fit was profiled in this context")
        return self.runs[run]

    def _spec(self, kind):
        name = f"{kind}-{len(self.runs) + 1}" if self.runs else kind
        return {"mode": self.mode, "out": self.out, "name": name, "rows": self.rows,
                "models": self.models, "gzip": self.gzip}

    def __repr__(self):
        return f"shoal.profile(mode={self.mode!r}, out={self.out!r}, runs={len(self.runs)})"


def spec(kind):
    """The innermost active context's spec for a fit of `kind` (None: not profiling)."""
    return _active[-1]._spec(kind) if _active else None


def record(result):
    """Hands a fit's profile result (or None) to the innermost active context."""
    if result is not None and _active:
        _active[-1].runs.append(dict(result))


def _load(path) -> dict:
    with open(path) as f:
        return json.load(f)


_PHASES = ("data", "forward", "backward", "optimizer", "eval", "idle", "other")


def diff_summaries(a: dict, b: dict) -> pd.DataFrame:
    """Two summary dicts compared as src/shoal/profile/diff.cpp does (B - A)."""
    def per_step(ms, s):
        return ms * 1e3 / s["steps"] if s["steps"] > 0 else 0.0

    def row(kind, name, a_us, b_us, in_a=True, in_b=True, za=None, zb=None):
        return {"kind": kind, "name": name, "a_us": a_us if in_a else float("nan"),
                "b_us": b_us if in_b else float("nan"), "delta_us": b_us - a_us,
                "ratio": b_us / a_us if a_us > 0 else float("nan"),
                "a_gflops": (za or {}).get("gflops", float("nan")),
                "b_gflops": (zb or {}).get("gflops", float("nan")),
                "a_peak": (za or {}).get("peak_fraction", float("nan")),
                "b_peak": (zb or {}).get("peak_fraction", float("nan")),
                "only": "" if in_a and in_b else ("only in A" if in_a else "only in B")}

    rows = [row("step", "step (mean)", a["step_mean_us"], b["step_mean_us"])]
    phases = []
    for p in _PHASES:
        pa = per_step(a["breakdown_ms"].get(p, 0.0), a)
        pb = per_step(b["breakdown_ms"].get(p, 0.0), b)
        if pa or pb:
            phases.append(row("phase", p, pa, pb))

    def key(z):
        return z["name"] if z.get("model", 0) == 0 else f"{z['name']}@{z['model']}"

    za = {key(z): z for z in a["zones"] if z["name"] != "ProfilerStep"}
    zb = {key(z): z for z in b["zones"] if z["name"] != "ProfilerStep"}
    zones = [row("zone", k, per_step(za[k]["self_ms"], a) if k in za else 0.0,
                 per_step(zb[k]["self_ms"], b) if k in zb else 0.0, k in za, k in zb,
                 za.get(k), zb.get(k)) for k in sorted(set(za) | set(zb))]
    by_delta = lambda r: -abs(r["delta_us"])  # noqa: E731 (stable, as std::stable_sort)
    df = pd.DataFrame(rows + sorted(phases, key=by_delta) + sorted(zones, key=by_delta))
    ma, mb = a.get("machine", {}), b.get("machine", {})

    def differ(x, y):
        return abs(x - y) > 0.05 * max(x, y)

    known = all(m.get("peak_gflops", 0) > 0 and m.get("bandwidth_gbs", 0) > 0 for m in (ma, mb))
    same = ma.get("cpu") == mb.get("cpu") and not (known and (
        differ(ma["peak_gflops"], mb["peak_gflops"]) or
        differ(ma["bandwidth_gbs"], mb["bandwidth_gbs"])))
    df.attrs["machine_note"] = "" if same else (
        "runs from different machines: compared in time and in % of each one's own peak")
    return df
