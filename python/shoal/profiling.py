"""shoal.profile(): the profiler from Python, as a context manager in torch.profiler's manner.

    with shoal.profile("trace", out="prof") as prof:
        model.fit(train_df)
    print(prof.table())          # per zone: time, calls, FLOPs, GFLOP/s, % of the machine's peak
    prof.zones()                 # the same as a DataFrame
    prof.runs[0]["trace"]        # prof/ncf.pt.trace.json: open in https://ui.perfetto.dev

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

    def __init__(self, mode="stats", out="shoal-profile", rows=25, models=8):
        if mode not in ("stats", "trace"):
            raise ValueError(f"mode must be 'stats' or 'trace', got {mode!r}")
        if int(rows) < 1 or int(models) < 1:
            raise ValueError("rows and models must be ≥ 1")
        self.mode, self.out, self.rows, self.models = mode, str(out), int(rows), int(models)
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

    def _spec(self, kind):
        name = f"{kind}-{len(self.runs) + 1}" if self.runs else kind
        return {"mode": self.mode, "out": self.out, "name": name, "rows": self.rows,
                "models": self.models}

    def __repr__(self):
        return f"shoal.profile(mode={self.mode!r}, out={self.out!r}, runs={len(self.runs)})"


def spec(kind):
    """The innermost active context's spec for a fit of `kind` (None: not profiling)."""
    return _active[-1]._spec(kind) if _active else None


def record(result):
    """Hands a fit's profile result (or None) to the innermost active context."""
    if result is not None and _active:
        _active[-1].runs.append(dict(result))
