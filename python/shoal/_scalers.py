"""neuralforecast's local scalers (NeuralForecast(local_scaler_type=...)), computed as
coreforecast 0.0.20 computes them on neuralforecast's float32 dataset: per series and column
an (offset, scale) or a Box-Cox lambda, applied before the fit and inverted on the forecasts.

* standard: mean and population standard deviation (ddof 0), summed in double;
* robust: median and median absolute deviation (no 1.4826 factor); robust-iqr: median and
  q75 - q25; quantiles interpolate linearly between order statistics, in float32;
* minmax: min and max - min;
* boxcox: the lambda in [0, 2] maximising the profile log-likelihood (coreforecast's
  BoxCoxLambdaLogLik: Brent's minimiser with tolerance float32 eps^(1/4) on the negated
  log-likelihood), negative values refused. The lambda agrees with coreforecast's within that
  tolerance, not bit for bit (its optimiser takes a slightly different path on some series).

A zero scale reads as 1, as in coreforecast.
"""

from __future__ import annotations

import copy
import math

import numpy as np

TYPES = ("standard", "robust", "robust-iqr", "minmax", "boxcox")
F32 = np.float32


def _quantile(sorted_x, p):
    i_plus_g = F32(p) * F32(len(sorted_x) - 1)
    i = int(i_plus_g)
    g = F32(i_plus_g - F32(i))
    out = sorted_x[i]
    if g > 0:
        out = F32(out + g * (sorted_x[i + 1] - out))
    return F32(out)


def _neg_loglik(lam, x, logx, sum_log):
    lam = F32(lam)
    if lam == 0:
        t = logx.astype(np.float64)
    else:
        t = (np.exp(lam * logx) / lam).astype(F32).astype(np.float64)
    var = np.mean((t - t.mean()) ** 2)
    with np.errstate(all="ignore"):  # one value: log(0), and 0 * -inf is NaN as in C++
        return -float(F32((float(lam) - 1) * sum_log - np.float64(len(x) / 2) * np.log(var)))


def _brent_min(f, a, b, tol):
    """Brent's (1973) bounded minimiser without derivatives, as in netlib's fmin."""
    c = 0.3819660
    eps = math.sqrt(np.finfo(np.float64).eps)
    v = w = x = a + c * (b - a)
    d = e = 0.0
    fv = fw = fx = f(x)
    tol3 = tol / 3.0
    while True:
        xm = 0.5 * (a + b)
        tol1 = eps * abs(x) + tol3
        t2 = 2.0 * tol1
        if abs(x - xm) <= t2 - 0.5 * (b - a):
            return x
        p = q = r = 0.0
        if abs(e) > tol1:  # try a parabola through x, w, v
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0:
                p = -p
            else:
                q = -q
            r, e = e, d
        if abs(p) >= abs(0.5 * q * r) or p <= q * (a - x) or p >= q * (b - x):
            e = (b - x) if x < xm else (a - x)  # golden section
            d = c * e
        else:
            d = p / q
            u = x + d
            if u - a < t2 or b - u < t2:
                d = tol1 if x < xm else -tol1
        u = x + d if abs(d) >= tol1 else (x + tol1 if d > 0 else x - tol1)
        fu = f(u)
        if fu <= fx:
            if u < x:
                b = x
            else:
                a = x
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu


def _stats(kind, x):
    """(a, b) of one group x (float32): offset and scale, or (lambda, 0) for boxcox."""
    if kind == "minmax":
        lo, hi = x.min(), x.max()
        return F32(lo), F32(hi - lo)
    if kind == "standard":
        mean = math.fsum(x.astype(np.float64)) / len(x)
        var = float(np.sum((x.astype(np.float64) - mean) ** 2)) / len(x)
        return F32(mean), F32(math.sqrt(var))
    if kind in ("robust", "robust-iqr"):
        srt = np.sort(x)
        med = _quantile(srt, 0.5)
        if kind == "robust-iqr":
            return med, F32(_quantile(srt, 0.75) - _quantile(srt, 0.25))
        return med, _quantile(np.sort(np.abs(x - med)), 0.5)
    logx = np.log(x)
    sum_log = float(np.sum(logx.astype(np.float64)))
    tol = float(F32(np.finfo(F32).eps) ** F32(0.25))
    lam = _brent_min(lambda v: _neg_loglik(v, x, logx, sum_log), 0.0, 2.0, tol)
    return F32(lam), F32(0)


class LocalScaler:
    """One column's statistics over the groups of `offsets` ([n_groups + 1] row bounds)."""

    def __init__(self, kind, values, offsets, observed=None):
        """observed: rows the statistics read (None: all); a group without one keeps its
        values (offset 0, scale 1; boxcox lambda 1)."""
        if kind not in TYPES:
            raise ValueError(f"scaler_type must be one of {TYPES}")
        x = np.asarray(values, dtype=F32)
        keep = np.ones(len(x), bool) if observed is None else np.asarray(observed, bool)
        if kind == "boxcox" and (x[keep] < 0).any():
            raise ValueError("All values in data must be positive for method='loglik'")
        self.kind = kind
        groups = [x[offsets[i]:offsets[i + 1]][keep[offsets[i]:offsets[i + 1]]]
                  for i in range(len(offsets) - 1)]
        empty = (1, 0) if kind == "boxcox" else (0, 1)
        self.stats = np.array([_stats(kind, g) if len(g) else empty for g in groups],
                              dtype=F32).reshape(-1, 2)

    def _per_row(self, lengths):
        return np.repeat(self.stats, lengths, axis=0)

    def transform(self, values, lengths):
        """float32 values of len(stats) groups of `lengths` rows each, scaled."""
        x = np.asarray(values, dtype=F32)
        st = self._per_row(lengths)
        if self.kind == "boxcox":
            return _boxcox(x, st[:, 0])
        scale = np.where(st[:, 1] == 0, F32(1), st[:, 1])
        return ((x - st[:, 0]) / scale).astype(F32)

    def inverse(self, values, lengths):
        x = np.asarray(values, dtype=F32)
        st = self._per_row(lengths)
        if self.kind == "boxcox":
            return _inv_boxcox(x, st[:, 0])
        scale = np.where(st[:, 1] == 0, F32(1), st[:, 1])
        return (x * scale + st[:, 0]).astype(F32)


def _boxcox(x, lam):
    with np.errstate(all="ignore"):
        safe = np.where(lam == 0, F32(1), lam)
        pos = np.expm1(lam * np.log(np.abs(x))) / safe
        neg = (-np.exp(lam * np.log(np.abs(x))) - 1) / safe
        out = np.where(np.abs(lam) < 1e-19, np.log(x), np.where(x > 0, pos, neg))
        out = np.where((lam < 0) & (x < 0), np.nan, out)
    return out.astype(F32)


def _inv_boxcox(x, lam):
    with np.errstate(all="ignore"):
        safe = np.where(lam == 0, F32(1), lam)
        lx1 = lam * x + 1
        pos = np.exp(np.log1p(lam * x) / safe)
        neg = -np.exp(np.log(-lam * x - 1) / safe)
        out = np.where(lam == 0, np.exp(x), np.where(lx1 > 0, pos, neg))
        out = np.where((lam < 0) & (lx1 < 0), np.nan, out)
    return out.astype(F32)


def _scaled_rows(s):
    """Rows the scalers read and scale: all but each series' unscaled tail (fit(val_df=...)'s
    rows, which neuralforecast appends in data scale), or None for all."""
    if not s.unscaled_tail:
        return None
    keep = np.ones(len(s.y), bool)
    keep[(s.offsets[1:, None] - np.arange(1, s.unscaled_tail + 1)).reshape(-1)] = False
    return keep


def fit_series(kind, s, exog):
    """{column: LocalScaler} of y and each exogenous column, per series of s (a Series)."""
    keep = _scaled_rows(s)
    if keep is None:
        keep = s.available
    elif s.available is not None:
        keep = keep & s.available
    out = {"y": LocalScaler(kind, s.y, s.offsets, keep)}
    for c in exog:
        out[c] = LocalScaler(kind, s.exog[c], s.offsets, keep)
    return out


def scaled_series(s, scalers):
    """A copy of s whose y and exogenous columns hold their scaled values (float32 ones, as
    neuralforecast's dataset holds them); an unscaled tail keeps its values."""
    out = copy.copy(s)
    keep = _scaled_rows(s)

    def scaled(c, v):
        t = scalers[c].transform(v, s.lengths).astype(np.float64)
        return t if keep is None else np.where(keep, t, v)

    y = s.y if s.available is None else np.where(s.available, s.y, 0.0)
    out.y = scaled("y", y)
    out.exog = {c: (scaled(c, v) if c in scalers else v) for c, v in s.exog.items()}
    return out


def to_array(scalers, columns):
    """float32 [columns, series, 2]: each column's statistics, for a saved forecaster."""
    return np.stack([scalers[c].stats for c in columns]).astype(F32)


def from_array(kind, columns, stats):
    """{column: LocalScaler} of to_array's statistics."""
    if kind not in TYPES:
        raise ValueError(f"unknown local scaler type {kind!r}")
    stats = np.asarray(stats)
    if stats.dtype != F32 or stats.ndim != 3 or stats.shape[0] != len(columns) \
            or stats.shape[2] != 2:
        raise ValueError(f"scaler statistics of {len(columns)} columns must be float32 "
                         f"[columns, series, 2], got {stats.dtype} {stats.shape}")
    out = {}
    for c, st in zip(columns, stats):
        sc = LocalScaler.__new__(LocalScaler)
        sc.kind, sc.stats = kind, np.ascontiguousarray(st)
        out[c] = sc
    return out


def inverse_target(scalers, values):
    """values [n_series, ...] in model scale back in data scale (per series' y scaler)."""
    v = np.asarray(values)
    n = v.shape[0]
    flat = scalers["y"].inverse(v.reshape(-1), np.full(n, v[0].size if n else 0))
    return flat.astype(np.float64).reshape(v.shape)
