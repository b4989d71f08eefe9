"""The README's Python quick start: one TSMixerx per series on the shipped M3 monthly sample,
in this process and then over a local Dask cluster, scored against the held-out months.
Run from the repository root: python examples/python/quick_start.py"""

import pandas as pd
from distributed import Client

import shoal.dask
from shoal import NeuralForecast, TSMixerx

if __name__ == "__main__":  # Dask's worker processes import this file too
    df = pd.read_csv("examples/forecast/m3_monthly_200_train.csv.gz")  # unique_id, ds, y
    test = pd.read_csv("examples/forecast/m3_monthly_200_test.csv.gz")
    df = df[df.unique_id.isin(df.unique_id.unique()[:40])]             # the first 40 series

    def model():
        return TSMixerx(h=18, input_size=36, n_series=1, max_steps=300)

    nf = NeuralForecast(models=[model()], freq=1, per_series=True)      # one model per series
    fcst = nf.fit(df).predict()                                         # unique_id, ds, TSMixerx

    with Client(n_workers=2, threads_per_worker=1) as client:           # the same over Dask
        fcst_dask = shoal.dask.fit_many(client, df, model(), freq=1)

    scored = fcst.merge(test, on=["unique_id", "ds"])
    mae = (scored.TSMixerx - scored.y).abs().mean()
    same = (fcst.sort_values(["unique_id", "ds"]).TSMixerx.to_numpy() ==
            fcst_dask.sort_values(["unique_id", "ds"]).TSMixerx.to_numpy()).all()
    print(f"{fcst.unique_id.nunique()} series, MAE {mae:.1f} on the held-out 18 months; "
          f"Dask's forecasts {'are' if same else 'are NOT'} the same")
