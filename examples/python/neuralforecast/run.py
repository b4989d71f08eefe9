"""Runs neuralforecast's documented model examples (this folder) on shoal and writes what each
printed and forecast to <example>.out: the forecast frame and each forecast column's mean
absolute error on the held-out year. Plots go to the non-interactive Agg backend.

    PYTHONPATH=build/release/python build/pyenv/bin/python examples/python/neuralforecast/run.py \
        [example ...] [--max-steps N] [--no-write] [--neuralforecast]

--max-steps rewrites the examples' max_steps (the test suite runs them on 20 steps).
--neuralforecast turns the imports back into neuralforecast's and writes <example>.nf.out
(run it with a Python that has neuralforecast), for the comparison in README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = sorted(p.stem for p in HERE.glob("*.py") if p.stem != "run")


# shoal's import -> neuralforecast's (--neuralforecast)
_BACK = {"from shoal import": "from neuralforecast import",
         "from shoal.models import": "from neuralforecast.models import",
         "from shoal.losses import": "from neuralforecast.losses.pytorch import",
         "from shoal.utils import": "from neuralforecast.utils import"}


def run(name: str, max_steps: int | None = None,
        neuralforecast: bool = False) -> tuple[dict, str]:
    """Executes the example; returns its namespace and its report."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    source = (HERE / f"{name}.py").read_text()
    if neuralforecast:
        for ours, theirs in _BACK.items():
            source = source.replace(ours, theirs)
    if max_steps is not None:
        source = re.sub(r"max_steps\s*=\s*\d+", f"max_steps={max_steps}", source)
    namespace = {"__name__": f"example_{name}"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, str(HERE / f"{name}.py"), "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    forecasts = namespace["forecasts"]
    if "unique_id" not in forecasts.columns:
        forecasts = forecasts.reset_index()
    test = namespace["Y_test_df"]
    cols = [c for c in forecasts.columns if c not in ("index", "unique_id", "ds", "cutoff", "y")]
    merged = test[["unique_id", "ds", "y"]].merge(forecasts, on=["unique_id", "ds"])
    lines = [f"# {name}: {len(forecasts)} forecast rows, columns {cols}"]
    if printed.getvalue() and not neuralforecast:  # (Lightning's progress bars otherwise)
        lines += ["# printed:", printed.getvalue().rstrip()]
    for c in cols:
        lines.append(f"MAE {c}: {(merged[c] - merged['y']).abs().mean():.3f}")
    with_y = forecasts.merge(test[["unique_id", "ds", "y"]], on=["unique_id", "ds"])
    lines.append(with_y.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return namespace, "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("examples", nargs="*", default=EXAMPLES)
    p.add_argument("--max-steps", type=int)
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--neuralforecast", action="store_true")
    a = p.parse_args()
    for name in a.examples:
        _, report = run(name, a.max_steps, a.neuralforecast)
        print(report)
        if not a.no_write:
            (HERE / f"{name}{'.nf' if a.neuralforecast else ''}.out").write_text(report)


if __name__ == "__main__":
    main()
