"""NeuralForecast.save / load: a whole forecaster as a directory, written atomically and read
back with every file's size and sha256 checked (shoal._savedir, as NCF's saved models).

    model.json          format "shoal.forecaster", version, freq, per_series, workers, pin,
                        the local scaler types, the fit's column names, each model (class,
                        arguments as JSON with losses by class name and parameters, alias,
                        weight files), the dataset's columns, and every file's bytes and sha256
    model<i>.safetensors    model i's weights under neuralforecast's tensor names; a per-series
                        model keeps every series in this one file, each tensor stacked along
                        a leading series axis, in the order of
    model<i>.ids.json   its unique_ids (per-series models only)
    dataset.<k>.npy     column k of the fit's series (unique_id, ds, y, exogenous), sorted,
                        each series' fit(val_df=...) rows last (their count in model.json)
    static.<k>.npy      column k of the fit's static_df (when the models have statics)
    conformity.<k>.npy  fit(prediction_intervals=...)'s conformity scores of saved model k
                        [series, window, step] (float64), with its settings and unique_ids
                        in model.json, so predict(level=...) works after load
    categorical_vocab   (in model.json) the categorical exogenous columns' vocabularies:
                        per column, its values in code order (code 1 first)
    scalers.npy         the local scalers' statistics (local_scaler_type), float32
                        [column, series, 2]: per column (y, then the exogenous ones, named in
                        model.json) and series of the fit, (offset, scale) or (lambda, 0)
                        for boxcox. The static scalers have no file: they are fitted on
                        static_df's rows whenever the statics are read, as neuralforecast
                        fits them on each dataset

A forecaster without local scalers is written as version 1; with them, version 2 (a version-1
reader would forecast in the wrong scale).

A column of strings is a .json list instead of a .npy; no file is pickled.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pandas as pd

from . import _categorical, _savedir, _weights, _workflow
from . import _scalers as _scalers_mod
from ._frames import AVAILABLE
from . import losses as _losses
from ._auto import BaseAuto
from .models import _rebuild
from .models import column_names as _column_names


FORMAT, VERSION, VERSIONS = "shoal.forecaster", 1, (1, 2)
SCALERS = "scalers.npy"


# --- models -----------------------------------------------------------------------------------
def _arg_json(model, name, value):
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_arg_json(model, name, v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _arg_json(model, name, v) for k, v in value.items()}
    if name in ("loss", "valid_loss") and hasattr(_losses, type(value).__name__):
        # A loss's constructor arguments (those it keeps, where it records them).
        params = getattr(value, "_init_args", None) or vars(value)
        return {"loss": type(value).__name__, "params": {
            k: _arg_json(model, name, v) for k, v in params.items()}}
    raise ValueError(f"{model!r}: argument {name}={value!r} cannot be saved as JSON")


def _arg_value(value):
    if isinstance(value, dict) and set(value) == {"loss", "params"}:
        return getattr(_losses, value["loss"])(**value["params"])
    return value


def _model_entry(i, m):
    if isinstance(m, BaseAuto):
        m = m._saved_model()
    args = {k: _arg_json(m, k, getattr(m, k, v)) for k, v in m._args.items()}
    trainer = {k: _arg_json(m, k, v) for k, v in m.trainer_kwargs.items()}
    entry = {"class": m._nf_name, "alias": m.alias, "args": args, "trainer_kwargs": trainer}
    files = {}
    if m._series_weights is not None:
        ids = list(m._series_weights)
        files[f"model{i}.ids.json"] = _savedir.ids_json([_id_json(u) for u in ids])
        files[f"model{i}.safetensors"] = _stack(m, [m._series_weights[u] for u in ids])
        entry["weights"] = "per_series"
    elif m._weights is not None:
        files[f"model{i}.safetensors"] = m._weights
        entry["weights"] = "joint"
    else:
        entry["weights"] = None
    entry["weight_files"] = sorted(files)
    return entry, files


def _id_json(u):
    return u.item() if isinstance(u, np.generic) else u


def _stack(m, blobs):
    """One safetensors blob of every series' tensors, each stacked on a new leading axis."""
    per = [_weights.decode(b) for b in blobs]
    names = list(per[0])
    for k, t in enumerate(per):
        if list(t) != names or any(t[n].shape != per[0][n].shape for n in names):
            raise ValueError(f"{m!r}: series {k}'s tensors differ from the first series'")
    return _weights.encode({n: np.stack([t[n] for t in per]) for n in names},
                           _metadata(blobs[0]))


def _metadata(blob):
    (n,) = np.frombuffer(blob[:8], "<u8")
    return json.loads(blob[8:8 + int(n)]).get("__metadata__")


def _unstack(blob, n_ids):
    tensors = _weights.decode(blob)
    meta = _metadata(blob)
    for name, t in tensors.items():
        if t.ndim == 0 or t.shape[0] != n_ids:
            raise ValueError(f"tensor {name!r} of shape {t.shape} does not hold {n_ids} series")
    return [_weights.encode({name: t[k] for name, t in tensors.items()}, meta)
            for k in range(n_ids)]


# --- frames -----------------------------------------------------------------------------------
def _frame_files(df, prefix):
    """({file name: bytes}, column descriptions) of df's columns, without pickles."""
    files, columns = {}, []
    for k, c in enumerate(df.columns):
        col = df[c]
        entry = {"name": c, "dtype": str(col.dtype)}
        if isinstance(col.dtype, pd.DatetimeTZDtype):
            values = col.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
        elif col.dtype == object or isinstance(col.dtype, (pd.StringDtype, pd.CategoricalDtype)):
            values = None
        else:
            values = col.to_numpy()
        if values is None or values.dtype == object:
            name = f"{prefix}.{k}.json"
            files[name] = json.dumps([_id_json(v) for v in col.tolist()]).encode()
        else:
            name = f"{prefix}.{k}.npy"
            files[name] = _npy(values)
        entry["file"] = name
        columns.append(entry)
    return files, columns


def _frame(columns, blobs):
    out = {}
    for entry in columns:
        blob = blobs[entry["file"]]
        if entry["file"].endswith(".json"):
            col = pd.Series(json.loads(blob))
            if entry["dtype"] != "object":
                col = col.astype(entry["dtype"])
        else:
            col = pd.Series(np.load(io.BytesIO(blob), allow_pickle=False))
            if entry["dtype"].startswith("datetime64[") and "," in entry["dtype"]:
                tz = entry["dtype"].split(",", 1)[1].rstrip("]").strip()
                col = col.dt.tz_localize("UTC").dt.tz_convert(tz)
        out[entry["name"]] = col
    return pd.DataFrame(out)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _conformity(nf, model_index, files):
    """The prediction-interval calibration of the saved models' columns, or None."""
    if nf._conformity is None:
        return None
    pi, ids, scores = nf._conformity
    names = _column_names(nf.models)
    saved = []  # one file per saved model, in their order
    for k, i in enumerate(sorted(set(int(i) for i in model_index))):
        saved.append(f"conformity.{k}.npy")
        files[saved[-1]] = _npy(scores[names[i]])
    return {"n_windows": pi.n_windows, "method": pi.method, "step_size": pi.step_size,
            "ids": [_id_json(u) for u in ids], "scores": saved}


def _scalers(nf, files):
    """model.json's description of the fit's local scalers (their statistics into files)."""
    if nf._scalers is None:
        return None
    columns = ["y"] + [c for c in nf._exog() if c in nf._scalers]
    files[SCALERS] = _npy(_scalers_mod.to_array(nf._scalers, columns))
    return {"columns": columns, "file": SCALERS}


def _restore_scalers(nf, entry, blobs, n_series):
    try:
        stats = np.load(io.BytesIO(blobs[entry["file"]]), allow_pickle=False)
        nf._scalers = _scalers_mod.from_array(nf.local_scaler_type, entry["columns"], stats)
    except ValueError as e:
        raise ValueError(f"{entry['file']}: {e}") from e
    missing = [c for c in ["y"] + nf._exog()
               if c not in nf._scalers and c not in nf.categorical_vocab_]
    if missing:
        raise ValueError(f"{entry['file']} has no statistics of column {missing[0]!r}")
    if n_series is not None and stats.shape[1] != n_series:
        raise ValueError(f"{entry['file']} holds {stats.shape[1]} series' statistics; the "
                         f"dataset has {n_series} series")


def _restore_conformity(nf, c, blobs):
    from .utils import PredictionIntervals

    pi = PredictionIntervals(n_windows=c["n_windows"], method=c["method"],
                             step_size=c["step_size"])
    # The loaded models' columns (a model_index subset may rename a repeated alias).
    scores = {n: np.load(io.BytesIO(blobs[f]), allow_pickle=False)
              for n, f in zip(_column_names(nf.models), c["scores"])}
    nf._conformity = (pi, pd.Index(c["ids"]), scores)


# --- save and load ----------------------------------------------------------------------------
def save(nf, path, model_index=None, save_dataset=True, overwrite=False):
    path = os.fspath(path)
    if model_index is None:
        model_index = list(range(len(nf.models)))
    bad = [i for i in model_index if not isinstance(i, (int, np.integer))
           or isinstance(i, bool) or not 0 <= i < len(nf.models)]
    if bad:
        raise ValueError(f"model_index {bad[0]!r} is not the index of one of the "
                         f"{len(nf.models)} models")
    if os.path.exists(path) and not overwrite and (
            not os.path.isdir(path) or os.listdir(path)):
        raise FileExistsError(f"{path}: directory is not empty. Set `overwrite=True` to "
                              "overwrite files.")
    _savedir.check(path, FORMAT)
    if save_dataset and nf._fit_args is None:
        raise ValueError("You need to have a stored dataset to save it (fit first), set "
                         "`save_dataset=False` to skip saving dataset.")
    files, entries = {}, []
    for i in sorted(set(int(i) for i in model_index)):
        entry, blobs = _model_entry(i, nf.models[i])
        entries.append(entry)
        files.update(blobs)
    freq = nf.freq if isinstance(nf.freq, str) else (
        int(nf.freq) if isinstance(nf.freq, (int, np.integer)) else nf.freq.freqstr)
    meta = {"freq": freq, "per_series": nf.per_series, "workers": nf.workers, "pin": nf.pin,
            "local_scaler_type": nf.local_scaler_type,
            "local_static_scaler_type": nf.local_static_scaler_type,
            "models": entries, "dataset": None}
    if save_dataset:
        s, static_df, cols = (nf._fit_args[k] for k in ("series", "static_df", "cols"))
        keep = [cols["id_col"], cols["time_col"], cols["target_col"]] + nf._exog()
        if s.available is not None:
            keep.append(AVAILABLE)
        frame_files, columns = _frame_files(s.df[keep].reset_index(drop=True), "dataset")
        files.update(frame_files)
        dataset = {"cols": cols, "columns": columns, "static": None,
                   "val_rows": int(s.unscaled_tail)}
        if static_df is not None:
            stat = static_df[[cols["id_col"]] + nf._stat_cols()].reset_index(drop=True)
            frame_files, dataset["static"] = _frame_files(stat, "static")
            files.update(frame_files)
        dataset["polars"] = bool(nf._fit_args.get("polars", False))
        meta["dataset"] = dataset
    meta["conformity"] = _conformity(nf, model_index, files)
    meta["scalers"] = _scalers(nf, files)
    meta["categorical_vocab"] = _categorical.to_json(nf.categorical_vocab_)
    scaled = nf.local_scaler_type is not None or nf.local_static_scaler_type is not None
    _savedir.write(path, meta, files, FORMAT, 2 if scaled else VERSION)


def load(cls, path, verbose=False, allow_pickle=False, trust_remote=False, **kwargs):
    if kwargs:
        raise NotImplementedError(f"NeuralForecast.load: shoal takes no model load arguments "
                                  f"{', '.join(sorted(kwargs))} (neuralforecast passes them to "
                                  "each PyTorch model's load)")
    path = os.fspath(path)
    if "://" in path and not path.startswith("file://"):
        if not trust_remote:
            raise ValueError(f"{path} is not a local path; pass trust_remote=True to load "
                             "from it")
        raise NotImplementedError("NeuralForecast.load: shoal reads local directories only")
    path = path[len("file://"):] if path.startswith("file://") else path
    # allow_pickle changes nothing: shoal's directories hold no pickles, and a neuralforecast
    # directory (no model.json) is refused as not a shoal model.
    del allow_pickle

    def names(meta):
        return sorted(meta["files"])

    meta, blobs = _savedir.read(path, names, FORMAT, VERSIONS)
    with _savedir.reading(path):
        models = []
        for i, entry in enumerate(meta["models"]):
            args = {k: _arg_value(v) for k, v in entry["args"].items()}
            m = _rebuild(entry["class"], args, entry["trainer_kwargs"])
            files = entry["weight_files"]
            if entry["weights"] == "joint":
                m._weights = blobs[files[0]]
                _weights.decode(m._weights)
            elif entry["weights"] == "per_series":
                ids = _savedir.ids_from_json(blobs[next(f for f in files if f.endswith(".json"))])
                weights = blobs[next(f for f in files if f.endswith(".safetensors"))]
                m._series_weights = dict(zip(ids, _unstack(weights, len(ids))))
            models.append(m)
            if verbose:
                print(f"Model {m!r} loaded.")
        nf = cls(models, meta["freq"], meta.get("local_scaler_type"),
                 meta.get("local_static_scaler_type"), per_series=meta["per_series"],
                 workers=meta["workers"], pin=meta["pin"])
        nf.categorical_vocab_ = _categorical.from_json(meta.get("categorical_vocab") or {})
        dataset, s = meta["dataset"], None
        if dataset is not None:
            cols = dataset["cols"]
            s = _dataset_series(nf, _frame(dataset["columns"], blobs), cols,
                                dataset.get("val_rows", 0))
            static_df = (_frame(dataset["static"], blobs) if dataset["static"] is not None
                         else None)
            nf._fit_args = dict(series=s, static_df=static_df, cols=cols,
                                polars=dataset.get("polars", False))
        if meta.get("conformity") is not None:
            _restore_conformity(nf, meta["conformity"], blobs)
        if meta.get("scalers") is not None:
            _restore_scalers(nf, meta["scalers"], blobs, None if s is None else s.n_series)
        if verbose:
            print("Dataset loaded." if dataset is not None else "No dataset found in directory.")
    return nf


def _dataset_series(nf, frame, cols, val_rows):
    """The saved series: each series' df rows, then its last val_rows rows appended as
    fit(val_df=...) appended them (whatever their dates, left unscaled)."""
    if not val_rows:
        return nf._series(frame, cols)
    ids = frame[cols["id_col"]].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)]
    val = np.zeros(len(ids), bool)
    for e in ends:
        val[e - val_rows:e] = True
    s = nf._series(frame[~val].reset_index(drop=True), cols)
    s, _ = _workflow.append_validation(nf, s, frame[val].reset_index(drop=True), cols)
    return s
