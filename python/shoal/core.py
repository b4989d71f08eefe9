"""shoal.NeuralForecast: neuralforecast's NeuralForecast API over shoal's C++ fits.

    nf = NeuralForecast(models=[TSMixerx(h=12, input_size=24, n_series=2)], freq="ME")
    nf.fit(df)                      # unique_id, ds, y (+ exogenous columns)
    nf.predict(futr_df=futr)        # unique_id, ds, TSMixerx   (float32, like neuralforecast)
    nf.cross_validation(df, n_windows=3)

A TSMixer(x) models n_series series jointly, as in neuralforecast; a univariate model (NLinear)
is trained globally, one model over every series (data-parallel on `workers` threads). Several
models fit one after the other and give one column each. `per_series=True` fits one model per
unique_id instead (n_series=1), all of them through the C++ fleet on every core.
"""

from __future__ import annotations

import functools
import inspect
import sys

import numpy as np
import pandas as pd

from . import _arguments, _categorical, _core, _forecaster_io, _scalers, _workflow, profiling
from . import losses as _losses
from ._frames import (Series, Statics, category_codes, future_ds, is_polars, long_frame,
                      to_pandas, to_polars)
from ._progress import ProgressBar
from .utils import conformal_intervals
from ._progress import wanted as progress_wanted
from ._auto import BaseAuto
from .models import _ForecastModel, _is_default, column_names as _column_names


_FRAME_ARGS = ("df", "static_df", "futr_df", "val_df")


def _frames_in_and_out(method):
    """Lets a method take polars frames as neuralforecast does: polars inputs are read as
    pandas, and a frame it returns is polars when its input was (or, without df, when the fit's
    df was); future dates then follow polars' intervals ("1mo", "1d")."""
    params = list(inspect.signature(method).parameters)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        bound = dict(zip(params[1:], args), **kwargs)
        polars = any(is_polars(bound.get(a)) for a in _FRAME_ARGS)
        if bound.get("df") is None and self._fit_args is not None:
            polars = polars or self._fit_args.get("polars", False)
        args = [to_pandas(a) for a in args]
        kwargs = {k: to_pandas(v) for k, v in kwargs.items()}
        outer, self._polars = self._polars, polars
        try:
            out = method(self, *args, **kwargs)
        finally:
            self._polars = outer
        return to_polars(out) if polars and isinstance(out, pd.DataFrame) else out

    return wrapper


class NeuralForecast:
    def __init__(self, models, freq, local_scaler_type=None, local_static_scaler_type=None,
                 per_series=False, workers=0, pin=True):
        """models: shoal forecasting models (TSMixer, TSMixerx, NLinear, ...); freq: a pandas frequency ("ME", "D", "h", ...)
        or an integer step when ds holds integers. per_series: one model per unique_id (each
        model's n_series must be 1), trained by the fleet with `workers` threads (0: every
        allowed core), pinned one per core unless pin=False (use False when several processes
        share the machine, e.g. Dask workers)."""
        for arg, kind in (("scaler_type", local_scaler_type),
                          ("static_scaler_type", local_static_scaler_type)):
            if kind is not None and kind not in _scalers.TYPES:
                raise ValueError(f"{arg} must be one of {_scalers.TYPES}")
        models = list(models)
        if not models:
            raise ValueError("models must hold at least one model")
        for m in models:
            if not isinstance(m, (_ForecastModel, BaseAuto)):
                raise ValueError(f"{m!r} is not a shoal forecasting model (e.g. shoal.TSMixerx)")
            if per_series and getattr(m, "n_series", 1) != 1:
                raise ValueError(f"per_series=True fits one model per series: {m!r} needs "
                                 f"n_series=1, got {m.n_series}")
        if isinstance(freq, (bool, np.bool_)) or (
                not isinstance(freq, (str, int, np.integer)) and not hasattr(freq, "freqstr")):
            raise ValueError(f"freq must be a pandas frequency or an integer, got {freq!r}")
        if isinstance(freq, (int, np.integer)) and not 1 <= int(freq) <= 2**62:
            raise ValueError(f"an integer freq is the step between ds values: it must be ≥ 1, "
                             f"got {freq}")
        self.models = models
        self.freq = freq
        self.per_series = bool(per_series)
        self.workers = _arguments.thread_count(workers, "workers")
        self.pin = bool(pin)
        # neuralforecast's local scalers: per series and column, fitted on each fit's df (and
        # on predict's df while it runs), inverted on the forecasts (shoal._scalers).
        self.local_scaler_type = local_scaler_type
        self.local_static_scaler_type = local_static_scaler_type
        self._scalers = None
        # neuralforecast's categorical_vocab_: {column: {value: code}} of the last fit's frames.
        self.categorical_vocab_ = {}
        self._fit_args = None  # the frames of the last fit, predict's defaults
        self._polars = False  # the current call's frames are polars
        # (PredictionIntervals, the fit's unique_ids, {model column: conformity scores}).
        self._conformity = None
        self.fit_info = []  # per model: steps, val_losses, seconds

    # --- helpers ----------------------------------------------------------------------------
    def _exog(self):
        names = []
        for m in self.models:
            for c in m.hist_exog_list + m.futr_exog_list:
                if c not in names:
                    names.append(c)
        return names

    def _stat_cols(self):
        names = []
        for m in self.models:
            for c in m.stat_exog_list:
                if c not in names:
                    names.append(c)
        return names

    def _series(self, df, cols, what="df"):
        s = Series(df, cols["id_col"], cols["time_col"], cols["target_col"], self._exog(), what,
                   categories=self.categorical_vocab_)
        is_int = pd.api.types.is_integer_dtype(s.ds_values.dtype)
        if is_int != isinstance(self.freq, (int, np.integer)):
            raise ValueError(f"{what} column {cols['time_col']!r} is "
                             f"{'integer' if is_int else 'a timestamp'} but freq={self.freq!r}; "
                             "use an integer freq with integer ds and a pandas frequency with "
                             "timestamps")
        return s

    def _statics(self, static_df, s, cols):
        stat = self._stat_cols()
        if not stat:
            return None
        if static_df is None:
            raise ValueError(f"stat_exog_list {stat} needs static_df")
        st = Statics(static_df, s, stat, cols["id_col"], categories=self.categorical_vocab_)
        if self.local_static_scaler_type is None:
            return st.core
        n = s.n_series  # one group over every series, per column (neuralforecast)
        values = np.stack([v if c in self.categorical_vocab_ else
                           _scalers.LocalScaler(self.local_static_scaler_type, v, [0, n])
                           .transform(v, [n]) for c, v in zip(stat, st.values.T)], axis=1)
        return _core.make_static(np.ascontiguousarray(values, dtype=np.float64), list(stat))

    def _fit_scalers(self, s):
        """The local scalers of series s (None without local_scaler_type)."""
        if self.local_scaler_type is None:
            return None
        # Categorical codes are not scaled (neuralforecast's _scalers_fit_transform).
        return _scalers.fit_series(self.local_scaler_type, s,
                                   [c for c in self._exog() if c not in self.categorical_vocab_])

    def _model_scale(self, s):
        """s as the models see it: scaled by the current local scalers."""
        return s if self._scalers is None else _scalers.scaled_series(s, self._scalers)

    def _check_joint(self, m, s):
        if not self.per_series and getattr(m, "n_series", s.n_series) != s.n_series:
            raise ValueError(f"{m!r} was built with n_series={m.n_series} but df has "
                             f"{s.n_series} series; set n_series={s.n_series}, or fit one model "
                             "per series with NeuralForecast(..., per_series=True)")

    def _init_weights(self, m, s, use_init_models):
        """The weights m's fit starts from: its fitted ones unless use_init_models (a fit of a
        fitted neuralforecast model continues training it), per series for per_series."""
        if use_init_models or not m.fitted:
            return None
        if self.per_series != (m._series_weights is not None):
            was = "as one model" if self.per_series else "per series"
            raise ValueError(f"{m!r} was fitted {was}; fit with use_init_models=True to train "
                             "it afresh")
        if self.per_series:
            return [m._series_weights.get(u, b"") for u in s.ids]
        return m._weights

    def _fit_models(self, s, statics, val_size, test_size, use_init_models=False,
                    verbose=False):
        data = self._model_scale(s).core(self._exog())
        self.fit_info = []
        for m in self.models:
            fit_val = val_size
            if isinstance(m, BaseAuto):
                # The search first (validation on val_size rows, or h as neuralforecast);
                # globally, its best configuration is fitted below like any model.
                search = m._search_per_series if self.per_series else m._search_global
                args = (data, s.ids if self.per_series else s.n_series, statics,
                        val_size or m.h, test_size, self.pin)
                if self.per_series:
                    self.fit_info.append(search(*args))
                    continue
                fit_val = search(*args)
            self._check_joint(m, s)
            settings = m._settings(fit_val, test_size)
            init = self._init_weights(m, s, use_init_models)
            bar = (ProgressBar(repr(m), "fit" if self.per_series else "step")
                   if progress_wanted(verbose) else None)
            fit = self._fit_per_series if self.per_series else self._fit_global
            done = None
            try:
                info = fit(m, data, s, settings, statics, init, bar)
                done = s.n_series if self.per_series else info["steps"]
            finally:
                if bar is not None:
                    bar.close(done)  # None (a failed fit): where it stopped
            self.fit_info.append(info)
            if verbose:
                secs = info.get("seconds", info.get("wall_s"))
                print(f"shoal: fitted {m!r} on {s.n_series} series in {secs:.2f} s",
                      file=sys.stderr)

    def _fit_per_series(self, m, data, s, settings, statics, init, bar):
        r = _core.fit_fleet(data, settings, statics, None, 0, True, self.workers, self.pin,
                            profile=profiling.spec(type(m).__name__), init_weights=init,
                            progress=bar)
        profiling.record(r["profile"])
        failed = [i for i, e in enumerate(r["errors"]) if e]
        if failed:
            first = failed[0]
            raise ValueError(f"{m!r}: {len(failed)} of {s.n_series} series failed; "
                             f"unique_id {s.ids[first]!r}: {r['errors'][first]}")
        m._series_weights, m._weights = dict(zip(s.ids, r["weights"])), None
        return {"wall_s": r["wall_s"], "fits_per_s": r["fits_per_s"], "steps": r["steps"]}

    def _fit_global(self, m, data, s, settings, statics, init, bar):
        settings["num_threads"] = self.workers  # a global univariate fit's threads
        r = _core.fit_panel(data, list(range(s.n_series)), settings, statics, None, 0, True,
                            profile=profiling.spec(type(m).__name__), init_weights=init,
                            progress=bar)
        profiling.record(r["profile"])
        m._weights, m._series_weights = r["weights"], None
        return {"seconds": r["fit_seconds"], "steps": r["steps"], "val_losses": r["val_losses"]}

    def _predict_models(self, s, statics, futr, h_future, n_windows=0, cv_step=1, val_size=0,
                        test_size=0, only=None):
        """{column name: [n_series, W, h] forecasts} from each model's stored weights (or
        those of the model named `only`), in data scale: one column per model, or per output
        of a multi-output loss (output_columns)."""
        data = self._model_scale(s).core(self._exog())
        out = {}
        for name, m in zip(_column_names(self.models), self.models):
            if only is not None and name != only:
                continue
            if not m.fitted:
                raise ValueError(f"{m!r} is not fitted: call fit first (or load_weights)")
            fc = None
            for part, rows in self._parts(m, s):
                if rows is None:
                    self._check_joint(part, s)
                    groups, weights = [list(range(s.n_series))], [part._weights]
                else:
                    groups = [[i] for i in rows]
                    weights = [part._series_weights[s.ids[i]] for i in rows]
                got = _core.predict(data, groups, part._settings(val_size, test_size), weights,
                                    statics, futr, h_future, n_windows, cv_step)
                # [n_series, W, h, C] with this part's series filled, NaN elsewhere.
                if fc is None:
                    fc = got
                else:
                    fc[rows] = got[rows]
            for col, v in _losses.output_columns(name, m.loss, fc).items():
                out[col] = (v if self._scalers is None
                            else _scalers.inverse_target(self._scalers, v))
        return out

    @staticmethod
    def _parts(m, s):
        """[(model, rows of s)] whose stored weights forecast s: (m, None) for a joint model;
        per series, the models holding each series' weights (an Auto model searched per series
        has one per best configuration), every series of s covered."""
        parts = m._parts if isinstance(m, BaseAuto) and m._parts else [m]
        if parts[0]._series_weights is None:
            return [(m, None)]
        owner = {u: k for k, p in enumerate(parts) for u in p._series_weights}
        missing = [u for u in s.ids if u not in owner]
        if missing:
            raise ValueError(f"{m!r} has no model for unique_id {missing[0]!r} "
                             f"({len(missing)} series unseen in fit)")
        rows = [[] for _ in parts]
        for i, u in enumerate(s.ids):
            rows[owner[u]].append(i)
        return [(p, r) for p, r in zip(parts, rows) if r]

    def _futr(self, s, futr_df, h, cols):
        """The futr_df rows of the h steps after each series, as core series continuing them."""
        futr_cols = []
        for m in self.models:
            futr_cols += [c for c in m.futr_exog_list if c not in futr_cols]
        if not futr_cols:
            return None
        if futr_df is None:
            raise ValueError(f"futr_exog_list {futr_cols} needs futr_df with the {h} rows after "
                             "each series (see make_future_dataframe)")
        expected = self._future_frame(s, h, cols)
        idc, tc = cols["id_col"], cols["time_col"]
        Series(futr_df, idc, tc, exog=futr_cols, what="futr_df", require_y=False,
               categories=self.categorical_vocab_)  # checks
        merged = expected.merge(futr_df[[idc, tc] + futr_cols], on=[idc, tc], how="left",
                                indicator=True)
        for c in futr_cols:
            # A categorical value may be missing on a row that is there (read as unseen, code
            # 0, as neuralforecast encodes it); any other gap is an error.
            miss = ((merged["_merge"] == "left_only") if c in self.categorical_vocab_
                    else merged[c].isna()).to_numpy()
            if miss.any():
                pos = int(np.flatnonzero(miss)[0])
                raise ValueError(f"futr_df lacks column {c!r} for unique_id "
                                 f"{merged[idc].iloc[pos]!r} at ds {merged[tc].iloc[pos]!r} "
                                 f"({int(miss.sum())} of {len(merged)} future rows missing)")
        offsets = np.arange(s.n_series + 1, dtype=np.int64) * h
        exog = self._exog()
        vocab = self.categorical_vocab_
        cols_arrays = [(category_codes(merged[c], vocab[c], "futr_df") if c in vocab else
                        merged[c].to_numpy(np.float64)) if c in futr_cols
                       else np.zeros(len(merged)) for c in exog]
        if self._scalers is not None:  # neuralforecast scales futr_df with the df's scalers
            lengths = np.full(s.n_series, h)
            cols_arrays = [self._scalers[c].transform(a, lengths).astype(np.float64)
                           if c in self._scalers else a for c, a in zip(exog, cols_arrays)]
        return _core.make_series(offsets, np.zeros(len(merged)), cols_arrays, exog,
                                 s.lengths.astype(np.int64))

    # --- neuralforecast's API ---------------------------------------------------------------
    @_frames_in_and_out
    def fit(self, df=None, static_df=None, val_size=0, val_df=None, use_init_models=False,
            verbose=False, id_col="unique_id", time_col="ds", target_col="y",
            distributed_config=None, prediction_intervals=None):
        """Trains every model on df (unique_id, ds, y and exogenous columns). A model fitted
        before continues from its weights unless use_init_models=True, as in neuralforecast.
        df=None refits on the frames of the last fit. verbose prints one line per model.
        val_df: validation rows appended to each series of df, as neuralforecast does
        (shoal._workflow.append_validation)."""
        _refuse("fit", distributed_config=(distributed_config, None,
                                           "shoal.dask.fit_many spreads fits over a Dask "
                                           "cluster"))
        if val_df is not None and val_size != 0:
            raise ValueError("val_df and val_size cannot be set together. Set val_size=0 "
                             "(default) when providing val_df.")
        if val_df is not None and not isinstance(val_df, pd.DataFrame):
            raise ValueError("val_df must be a pandas or polars DataFrame.")
        if df is None:
            if self._fit_args is None:
                raise ValueError("fit needs df (unique_id, ds, y)")
            s, cols = self._fit_args["series"], self._fit_args["cols"]
            static_df = self._fit_args["static_df"] if static_df is None else static_df
        else:
            cols = dict(id_col=id_col, time_col=time_col, target_col=target_col)
            self.categorical_vocab_ = _categorical.build_vocab(self.models, df, static_df)
            s = self._series(df, cols)
        statics = self._statics(static_df, s, cols)
        # On df's rows only: neuralforecast fits the scalers before appending val_df, whose
        # rows it keeps in data scale (append_validation). With df=None the stored series'
        # df rows give the same statistics again (neuralforecast keeps its scaled dataset).
        self._scalers = self._fit_scalers(s)
        if val_df is not None:
            s, val_size = _workflow.append_validation(self, s, val_df, cols)
        self._conformity = None
        if prediction_intervals is not None:
            self._refuse_multi_output("prediction_intervals (conformal intervals of point "
                                      "forecasts)", "its quantile columns are its intervals")
            # neuralforecast's calibration: a cross_validation on df whose absolute errors are
            # the conformity scores; the final fit then continues from its weights. The
            # vocabulary stays df's (the calibration builds its own from its training rows).
            vocab = self.categorical_vocab_
            self._conformity = (prediction_intervals, s.ids, self._conformity_scores(
                df, static_df, prediction_intervals, val_size or 0, use_init_models, verbose,
                cols))
            self.categorical_vocab_ = vocab
        self._fit_models(s, statics, val_size or 0, 0, use_init_models, verbose)
        self._fit_args = dict(series=s, static_df=static_df, cols=cols, polars=self._polars,
                              test_size=0)
        return self

    def _conformity_scores(self, df, static_df, pi, val_size, use_init_models, verbose, cols):
        """{model column: |y − ŷ| [n_series, n_windows, h]} of a cross_validation on df."""
        if df is None:
            raise ValueError("prediction_intervals needs df")
        h = self.models[0].h
        need = h + pi.step_size * (pi.n_windows - 1) + 1 + val_size
        shortest = int(df.groupby(cols["id_col"]).size().min())
        if shortest < need:
            raise ValueError("Minimum required samples in each serie for the prediction "
                             f"intervals settings are: {need}, shortest serie has: {shortest}. "
                             "Please reduce the number of windows, horizon, validation size "
                             "or remove those series.")
        cv = self.cross_validation(df, static_df, n_windows=pi.n_windows,
                                   step_size=pi.step_size, val_size=val_size,
                                   use_init_models=use_init_models, verbose=verbose, **cols)
        n = cv[cols["id_col"]].nunique()
        y = cv[cols["target_col"]].to_numpy(np.float64)
        return {name: np.abs(cv[name].to_numpy(np.float64) - y).reshape(n, pi.n_windows, h)
                for name in _column_names(self.models)}

    def _with_intervals(self, fc, s, level, quantiles):
        """fc with each model's conformal interval columns after it (neuralforecast's order)."""
        pi, ids, scores = self._conformity
        if list(s.ids) != list(ids):
            raise ValueError("prediction intervals were calibrated on the fit's series; predict "
                             "them for the same unique_ids in the same order")
        level = sorted(set(level)) if level is not None else None
        quantiles = sorted(set(quantiles)) if quantiles is not None else None
        out = {}
        for name, v in fc.items():
            out[name] = v
            point = v.reshape(v.shape[0], -1)
            for col, q in conformal_intervals(pi.method, point, scores[name], name, level,
                                              quantiles).items():
                out[col] = q
        return out

    @_frames_in_and_out
    def make_future_dataframe(self, df=None, h=None):
        """The unique_id and ds of the h steps after each series of df (default: the fit's
        df; h defaults to the models' horizon)."""
        return self._make_future(df, h)

    def _make_future(self, df, h):
        cols = self._cols()
        if df is not None:
            s = Series(df, cols["id_col"], cols["time_col"], cols["target_col"], what="df",
                       require_y=False)
        elif self._fit_args is not None:
            s = self._fit_args["series"]
        else:
            raise ValueError("make_future_dataframe needs df or a fitted NeuralForecast")
        return self._future_frame(s, h or self.models[0].h, cols)

    @_frames_in_and_out
    def get_missing_future(self, futr_df, df=None, h=None):
        """The rows of make_future_dataframe(df, h) that futr_df lacks (unique_id, ds)."""
        cols = self._cols()
        expected = self._make_future(df, h)
        keys = [cols["id_col"], cols["time_col"]]
        merged = expected.merge(futr_df[keys].drop_duplicates(), on=keys, how="left",
                                indicator=True)
        return merged.loc[merged["_merge"] == "left_only", keys].reset_index(drop=True)

    def _refuse_multi_output(self, what, instead):
        """NotImplementedError for `what` when a model trains with MQLoss or DistributionLoss."""
        for m in self.models:
            if _losses.output_names(m.loss) != [""]:
                raise NotImplementedError(f"{what} for {m!r}, trained with "
                                          f"{type(m.loss).__name__}, is not supported by shoal "
                                          f"({instead})")

    def _cols(self):
        return self._fit_args["cols"] if self._fit_args else dict(
            id_col="unique_id", time_col="ds", target_col="y")

    def _future_frame(self, s, h, cols):
        return long_frame(s, cols["id_col"], cols["time_col"], h,
                          future_ds(s.last_ds, self.freq, h, self._polars), {})

    @_frames_in_and_out
    def predict(self, df=None, static_df=None, futr_df=None, verbose=False, engine=None,
                level=None, quantiles=None, h=None, **data_kwargs):
        """Forecasts of the h steps after each series of df (default: the fit's df), columns
        unique_id, ds and one float32 column per model; with `level` or `quantiles`, the
        conformal intervals fit(prediction_intervals=...) calibrated, beside each model's
        column (shoal.utils). verbose has no effect (nothing to report)."""
        _refuse("predict", engine=(engine, None, "pass a pandas DataFrame"))
        _refuse_extra("predict", data_kwargs)
        if level is not None and quantiles is not None:
            raise ValueError("You can't set both level and quantiles.")
        level, quantiles = _interval_args(level, quantiles)
        if h is not None:
            _arguments.count(h, "h")
        if level is not None or quantiles is not None:
            self._refuse_multi_output("predict(level=..., quantiles=...)",
                                      "its quantile columns come with every predict")
        if (level is not None or quantiles is not None) and self._conformity is None:
            raise AttributeError("level or quantiles need prediction intervals: fit with "
                                 "prediction_intervals=PredictionIntervals(...) (shoal.utils)")
        if self._fit_args is None and df is None:
            raise ValueError("predict needs df when the models were not fitted here")
        cols = self._cols()
        if df is None:
            s = self._fit_args["series"]
            static_df = self._fit_args["static_df"] if static_df is None else static_df
        else:
            s = self._series(df, cols)
        hs = {m.h for m in self.models}
        if len(hs) != 1:
            raise NotImplementedError(f"models with different horizons {sorted(hs)}")
        horizon = hs.pop()
        if h is not None and h < horizon:
            raise NotImplementedError(f"h={h} is shorter than the models' horizon {horizon}; "
                                      "take the first h steps of predict()")
        if h is not None and h > horizon:
            self._refuse_multi_output(f"predict(h={h}) beyond the models' horizon",
                                      "predict the models' own horizon")
        statics = self._statics(static_df, s, cols)
        saved = self._scalers
        if df is not None:  # neuralforecast scales a new df with its own statistics
            self._scalers = self._fit_scalers(s)
        try:
            return self._predict_frame(s, statics, futr_df, h, horizon, level, quantiles, cols)
        finally:
            self._scalers = saved

    def _predict_frame(self, s, statics, futr_df, h, horizon, level, quantiles, cols):
        if h is not None and h > horizon:
            fc = _workflow.predict_recursive(self, _column_names(self.models), s, statics,
                                             futr_df, h, horizon, cols)
            horizon = h
        else:
            futr = self._futr(s, futr_df, horizon, cols)
            fc = self._predict_models(s, statics, futr, horizon if futr is not None else 0)
        if level is not None or quantiles is not None:
            fc = self._with_intervals(fc, s, level, quantiles)
        values = {k: v.reshape(-1).astype(np.float32) for k, v in fc.items()}
        return long_frame(s, cols["id_col"], cols["time_col"], horizon,
                          future_ds(s.last_ds, self.freq, horizon, self._polars), values)

    @_frames_in_and_out
    def cross_validation(self, df=None, static_df=None, n_windows=1, step_size=1, val_size=0,
                         test_size=None, use_init_models=False, use_fitted=False, verbose=False,
                         refit=False, id_col="unique_id", time_col="ds", target_col="y",
                         prediction_intervals=None, level=None, quantiles=None, h=None,
                         **data_kwargs):
        """Fits on df less its last test_size rows, then forecasts n_windows windows step_size
        apart: columns unique_id, ds, cutoff, one float32 column per model, y; sorted by
        unique_id, cutoff, ds (neuralforecast's layout). Fitted models continue from their
        weights unless use_init_models=True; verbose prints one line per model fit."""
        _refuse("cross_validation",
                use_fitted=(use_fitted, False, "in-sample forecasts are not implemented yet"))
        if isinstance(refit, (bool, np.bool_)):
            refit = int(refit)
        elif not isinstance(refit, (int, np.integer)) or refit < 0:
            raise ValueError(f"refit must be a bool or a non-negative integer, got {refit!r}")
        level, quantiles = _interval_args(level, quantiles)
        if n_windows is not None:
            n_windows = _arguments.count(n_windows, "n_windows")
        step_size = _arguments.count(step_size, "step_size")
        for name, value, lo in (("h", h, 1), ("test_size", test_size, 1),
                                ("val_size", val_size, 0)):
            if value is not None:
                _arguments.count(value, name, lo=lo)
        if prediction_intervals is not None:
            if level is None and quantiles is None:
                raise Exception("When passing prediction_intervals you need to set the level or "
                                "quantiles argument.")
            if not refit:
                raise Exception("Passing prediction_intervals is only supported with "
                                "refit=True.")
        if not refit:
            _refuse("cross_validation",
                    level=(level, None, "probabilistic forecasts are not implemented yet; "
                                        "conformal intervals need refit"),
                    quantiles=(quantiles, None, "probabilistic forecasts are not implemented "
                                                "yet; conformal intervals need refit"))
        _refuse_extra("cross_validation", data_kwargs)
        if df is None:
            raise ValueError("cross_validation needs df")
        hs = {m.h for m in self.models}
        if len(hs) != 1:
            raise NotImplementedError(f"models with different horizons {sorted(hs)}")
        if h is not None and h not in hs:
            raise NotImplementedError(f"h={h} differs from the models' horizon {min(hs)}; a "
                                      f"horizon other than the models' is not supported yet")
        h = hs.pop()
        if test_size is None:
            test_size = h + step_size * (n_windows - 1)
        elif n_windows is None:
            if (test_size - h) % step_size:
                raise ValueError("test_size - h must be a multiple of step_size")
            n_windows = (test_size - h) // step_size + 1
        elif test_size != h + step_size * (n_windows - 1):
            raise ValueError(f"test_size {test_size} disagrees with h + step_size * (n_windows "
                             f"- 1) = {h + step_size * (n_windows - 1)}; pass one of them")
        cols = dict(id_col=id_col, time_col=time_col, target_col=target_col)
        # (A refit's fits build theirs again from each fold's training rows.)
        self.categorical_vocab_ = _categorical.build_vocab(self.models, df, static_df,
                                                           test_size, id_col, time_col)
        s = self._series(df, cols)
        short = np.flatnonzero(s.lengths < test_size + 1)
        if short.size:
            raise ValueError(f"series {s.ids[int(short[0])]!r} has {s.lengths[short[0]]} rows; "
                             f"cross_validation needs more than test_size = {test_size}")
        if refit:
            return _workflow.refit_cross_validation(
                self, s, static_df, n_windows, step_size, test_size, h, val_size or 0,
                use_init_models, verbose, refit, cols, prediction_intervals, level, quantiles)
        statics = self._statics(static_df, s, cols)
        self._scalers = self._fit_scalers(s)  # on all of df, test windows included (as there)
        self._fit_models(s, statics, val_size or 0, test_size, use_init_models, verbose)
        self._fit_args = dict(series=s, static_df=static_df, cols=cols, polars=self._polars,
                              test_size=test_size)
        fc = self._predict_models(s, statics, None, 0, n_windows, step_size, val_size or 0,
                                  test_size)
        # Row of window w, step t within each series: len - test_size + w * step_size + t.
        n = s.n_series
        w = np.arange(n_windows)
        t = np.arange(h)
        rel = (w[:, None] * step_size + t[None, :]).reshape(-1)  # [W * h]
        base = s.offsets[1:] - test_size  # first test row (absolute) per series
        rows = (base[:, None] + rel[None, :]).reshape(-1)
        cut_rows = np.repeat((base[:, None] + w[None, :] * step_size - 1).reshape(-1), h)
        idx = np.repeat(np.arange(n), n_windows * h)
        out = {id_col: s.id_values.take(idx), time_col: s.ds_values.take(rows),
               "cutoff": s.ds_values.take(cut_rows)}
        for k, v in fc.items():
            out[k] = v.reshape(-1).astype(np.float32)
        out[target_col] = s.df[target_col].to_numpy()[rows]
        frame = pd.DataFrame(out)
        return frame  # already in (unique_id, cutoff, ds) order

    @_frames_in_and_out
    def predict_insample(self, step_size=1, level=None, quantiles=None):
        """neuralforecast's in-sample forecasts of the last fit's (or cross_validation's) series:
        each series less the test_size rows its last cross_validation held out and less the
        first (len - test_size - h) % step_size rows, forecast in windows step_size apart from
        its first row on (inputs before it read as padding); columns unique_id, ds, cutoff (the
        step before each window), one float32 column per model and y. Univariate models only,
        as in neuralforecast."""
        _refuse("predict_insample",
                level=(level, None, "probabilistic forecasts are not implemented yet"),
                quantiles=(quantiles, None, "probabilistic forecasts are not implemented yet"))
        return _workflow.predict_insample(self, _column_names(self.models), step_size)

    def save(self, path, model_index=None, save_dataset=True, overwrite=False):
        """Writes the forecaster to the directory `path` (shoal._forecaster_io describes it):
        the models in model_index (default: all) with their arguments and weights and, with
        save_dataset, the fit's series so that predict() needs no df after load. An existing
        non-empty path raises unless overwrite=True; the directory appears whole or not at
        all."""
        _forecaster_io.save(self, path, model_index, save_dataset, overwrite)

    @staticmethod
    def load(path, verbose=False, allow_pickle=False, trust_remote=False, **kwargs):
        """The forecaster save() wrote to `path`, every file checked against its sha256
        (shoal.ModelFileError names a missing or damaged one). allow_pickle has no effect:
        nothing is pickled. A non-local path needs trust_remote=True and is then refused;
        model load arguments (**kwargs) are refused by name."""
        return _forecaster_io.load(NeuralForecast, path, verbose, allow_pickle, trust_remote,
                                   **kwargs)


def _interval_args(level, quantiles):
    """predict's and cross_validation's level and quantiles, checked (None stays None)."""
    return (None if level is None else _arguments.levels(level),
            None if quantiles is None else _arguments.quantiles(quantiles))


def _refuse(method, **given):
    """NotImplementedError naming the first argument given a value other than its default;
    each is (value, default, what to do instead)."""
    for name, (value, default, advice) in given.items():
        if not _is_default(value, default):
            raise NotImplementedError(f"{method}: {name}={value!r} is not supported by shoal "
                                      f"({advice})")


def _refuse_extra(method, extra):
    if extra:
        raise NotImplementedError(f"{method}: shoal takes no data arguments "
                                  f"{', '.join(sorted(extra))} (neuralforecast passes them to "
                                  "its Spark and Ray engines)")
