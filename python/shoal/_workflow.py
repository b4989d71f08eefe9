"""neuralforecast's workflow around fit and predict: cross_validation with refits and in-sample
forecasts, in neuralforecast 3.3.0's semantics (NeuralForecast's methods call these)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from . import _core
from . import losses as _losses
from ._frames import AVAILABLE, Series, core_series, to_pandas


def refit_cross_validation(nf, s, static_df, n_windows, step_size, test_size, h, val_size,
                           use_init_models, verbose, refit, cols, prediction_intervals, level,
                           quantiles):
    """neuralforecast's cross_validation(refit=...): window k's cutoff is test_size -
    k * step_size rows before each series' end; windows 0, refit, 2 * refit, ... fit on
    everything up to their cutoff (continuing from the previous fit's weights, as
    neuralforecast's fit does; use_init_models restarts only the first), the others predict
    from the data up to their cutoff with the last fit. Same frame as refit=False."""
    idc, tc, yc = cols["id_col"], cols["time_col"], cols["target_col"]
    pos = np.arange(len(s.df)) - np.repeat(s.offsets[:-1], s.lengths)  # row within series
    end = np.repeat(s.lengths, s.lengths)
    futr_needed = any(m.futr_exog_list for m in nf.models)
    folds = []
    for k in range(n_windows):
        cut = end - test_size + k * step_size  # rows before the cutoff's successor
        train = s.df[pos < cut]
        test = s.df[(pos >= cut) & (pos < cut + h)]
        if k == 0 or k % refit == 0:
            nf.fit(train, static_df, val_size=val_size,
                   use_init_models=use_init_models and k == 0, verbose=verbose,
                   prediction_intervals=prediction_intervals, **cols)
            predict_df = None
        else:
            predict_df = train
        preds = nf.predict(predict_df, static_df, futr_df=test if futr_needed else None,
                           verbose=verbose, level=level, quantiles=quantiles)
        preds = to_pandas(preds)
        last = train.groupby(idc, sort=False)[tc].last()
        preds.insert(2, "cutoff", last.reindex(preds[idc]).to_numpy())
        preds = preds.merge(test[[idc, tc, yc]], on=[idc, tc])
        folds.append(preds)
    out = pd.concat(folds, ignore_index=True)
    return out.sort_values([idc, "cutoff", tc], kind="stable").reset_index(drop=True)


def append_validation(nf, s, val_df, cols):
    """(df's series with val_df's rows appended to each, val_size): neuralforecast's
    fit(val_df=...) appends each series' val_df rows after its df rows whatever their dates
    (TimeSeriesDataset.append) and validates on them as on the last val_size rows; a later
    predict forecasts after val_df's end. Every series of val_df must have the same length."""
    v = Series(val_df, cols["id_col"], cols["time_col"], cols["target_col"], nf._exog(),
               "val_df", categories=nf.categorical_vocab_)
    if v.n_series != s.n_series:
        raise ValueError("Cannot append `futr_dataset` with different number of groups.")
    if list(v.ids) != list(s.ids):
        raise ValueError("val_df must hold the unique_ids of df")
    if v.lengths.min() != v.lengths.max():
        raise ValueError("All series in val_df must be of equal length. Found series lengths "
                         f"ranging from {v.lengths.min()} to {v.lengths.max()}")
    n = s.n_series
    src = np.concatenate([np.arange(s.offsets[i], s.offsets[i + 1]) for i in range(n)] +
                         [len(s.df) + np.arange(v.offsets[i], v.offsets[i + 1])
                          for i in range(n)])
    owner = np.concatenate([np.repeat(np.arange(n), s.lengths),
                            np.repeat(np.arange(n), v.lengths)])
    order = src[np.argsort(owner, kind="stable")]  # each series' df rows, then its val rows
    out = copy.copy(s)
    out.df = pd.concat([s.df, v.df[[c for c in s.df.columns if c in v.df.columns]]],
                       ignore_index=True).iloc[order]
    out.lengths = s.lengths + v.lengths
    out.offsets = np.concatenate([[0], np.cumsum(out.lengths)]).astype(np.int64)
    out.y = np.concatenate([s.y, v.y])[order]
    if s.available is not None or v.available is not None:
        out.available = np.concatenate([_observed(s), _observed(v)])[order]
        out.df = out.df.assign(**{AVAILABLE: out.available.astype(float)})
    out.exog = {c: np.concatenate([s.exog[c], v.exog[c]])[order] for c in s.exog}
    if (s.sample_weight is None) != (v.sample_weight is None):
        raise ValueError("df and val_df must both have a sample_weight column, or neither")
    if s.sample_weight is not None:  # validation windows are weighted by val_df's rows
        out.sample_weight = np.concatenate([s.sample_weight, v.sample_weight])[order]
    out.ds_values = out.df[cols["time_col"]].array
    out.last_ds = v.last_ds
    # neuralforecast scales df's rows with df's statistics and appends val_df's as they are
    # (TimeSeriesDataset.align + append): the local scalers leave them in data scale.
    out.unscaled_tail = s.unscaled_tail + int(v.lengths[0])
    return out, int(v.lengths[0])


def _observed(s):
    """s's available_mask as bools (every row observed without one)."""
    return np.ones(len(s.y), bool) if s.available is None else s.available


def predict_recursive(nf, names, s, statics, futr_df, h, horizon, cols):
    """neuralforecast's predict(h > model h) for direct models: ceil(h / horizon) rounds,
    each forecasting `horizon` steps from the series extended by the rounds before (its own
    forecasts as y, futr_df's future exogenous), truncated to h steps."""
    if any(m.hist_exog_list for m in nf.models):
        raise NotImplementedError(f"predict(h={h}) beyond the models' horizon {horizon} "
                                  "with historical exogenous inputs: their future values "
                                  "are unknown")
    if nf._scalers is not None and s.unscaled_tail:
        # neuralforecast extends its dataset in model scale after val_df's data-scale rows;
        # the rounds here extend the frame in data scale and would scale those rows.
        raise NotImplementedError(f"predict(h={h}) beyond the models' horizon {horizon} after "
                                  "fit(val_df=...) with a local scaler; refit without val_df "
                                  "or predict the models' own horizon")
    idc, tc, yc = cols["id_col"], cols["time_col"], cols["target_col"]
    exog = nf._exog()
    rounds = -(-h // horizon)
    out = {}
    for name in names:
        mask = [AVAILABLE] if s.available is not None else []
        frame, chunks, sk = s.df[[idc, tc, yc] + mask + exog], [], s
        for k in range(rounds):
            futr = nf._futr(sk, futr_df, horizon, cols)
            fc = nf._predict_models(sk, statics, futr, horizon if futr is not None else 0,
                                      only=name)[name].reshape(s.n_series, horizon)
            chunks.append(fc)
            if k + 1 == rounds:
                break
            new = nf._future_frame(sk, horizon, cols)
            new[yc] = fc.reshape(-1)
            if mask:
                new[AVAILABLE] = 1
            if exog:
                new = new.merge(futr_df[[idc, tc] + exog], on=[idc, tc], how="left")
            frame = pd.concat([frame, new], ignore_index=True)
            sk = nf._series(frame, cols)
        out[name] = np.concatenate(chunks, axis=1)[:, :h]
    return out


def predict_insample(nf, names, step_size):
    """The frame of NeuralForecast.predict_insample (its docstring says which rows)."""
    if nf._fit_args is None or not all(m.fitted for m in nf.models):
        raise Exception("The models must be fitted first with `fit` or `cross_validation`.")
    if isinstance(step_size, (bool, np.bool_)) or not isinstance(
            step_size, (int, np.integer)) or step_size < 1:
        raise ValueError(f"step_size must be a positive integer, got {step_size!r}")
    for m in nf.models:
        if hasattr(m, "n_series"):
            raise NotImplementedError(f"Model {m!r} is multivariate. Insample predictions "
                                      "are not supported for multivariate models.")
    h = nf.models[0].h
    s, cols = nf._fit_args["series"], nf._fit_args["cols"]
    test_size = nf._fit_args.get("test_size", 0)
    kept = s.lengths - test_size
    if (kept < h).any():
        raise ValueError("`sizes` should be greater or equal to `h`.")
    lead = (kept - h) % step_size  # neuralforecast's forefront_offset
    kept = kept - lead
    rows = np.concatenate([np.arange(o + f, o + f + k) for o, f, k in
                           zip(s.offsets[:-1], lead, kept)])
    offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
    exog = nf._exog()
    sm = nf._model_scale(s)
    data = core_series(offsets, sm.y[rows], [sm.exog[c][rows] for c in exog], exog,
                       np.zeros(0, np.int64), None if s.available is None else s.available[rows])
    statics = nf._statics(nf._fit_args["static_df"], s, cols)
    n_win = (kept - h) // step_size + 1
    # Window k forecasts rows k * step_size .. + h - 1 of the kept rows (neuralforecast's
    # predict windows with test_size = the kept length, left-padded by input_size).
    values = {}
    for name, m in zip(names, nf.models):
        per_series = [None] * s.n_series  # [windows * h, C] of each series
        for part, rows in nf._parts(m, s):
            rows = list(range(s.n_series)) if rows is None else rows
            weights = ([part._weights] * len(rows) if part._series_weights is None
                       else [part._series_weights[s.ids[i]] for i in rows])
            starts = [[int(k * step_size - part.input_size) for k in range(n_win[i])]
                      for i in rows]
            got = _core.predict_at(data, [[i] for i in rows], part._settings(0, 0), weights,
                                   statics, starts, [int(kept[i]) for i in rows])
            got = got.reshape(-1, len(_losses.output_names(m.loss)))
            bounds = np.cumsum([0] + [int(n_win[i]) * h for i in rows])
            for j, i in enumerate(rows):
                per_series[i] = got[bounds[j]:bounds[j + 1]]
        fc = np.concatenate(per_series)  # [rows, C], series after series
        for col, v in _losses.output_columns(name, m.loss, fc).items():
            if nf._scalers is not None:
                v = nf._scalers["y"].inverse(np.ascontiguousarray(v), n_win * h)
            values[col] = v.astype(np.float32)
    # Rows of the output: series i, window k, step t -> kept row k * step_size + t.
    series_idx = np.repeat(np.arange(s.n_series), n_win * h)
    win_first = np.concatenate([o + f + np.arange(w) * step_size for o, f, w in
                                zip(s.offsets[:-1], lead, n_win)])
    ds_rows = (np.repeat(win_first, h) + np.tile(np.arange(h), int(n_win.sum())))
    cut_rows = np.repeat(win_first, h)
    out = {cols["id_col"]: s.id_values.take(series_idx),
           cols["time_col"]: s.ds_values.take(ds_rows),
           "cutoff": _step_back(s.ds_values.take(cut_rows), nf.freq)}
    out.update(values)
    # neuralforecast reads y back from its float32 dataset
    y = sm.y[ds_rows].astype(np.float32)
    if nf._scalers is not None:
        y = nf._scalers["y"].inverse(y, n_win * h)
    if s.available is not None:  # a missing row's y as df holds it (scaling zeroed it)
        y = np.where(s.available[ds_rows], y, s.y[ds_rows].astype(np.float32))
    out[cols["target_col"]] = y
    return pd.DataFrame(out)


def _step_back(ds, freq):
    """ds one freq step earlier (utilsforecast's offset_times(ds, freq, -1))."""
    if isinstance(freq, (int, np.integer)):
        return np.asarray(ds, dtype=np.int64) - int(freq)
    return pd.DatetimeIndex(ds) - pd.tseries.frequencies.to_offset(freq)
