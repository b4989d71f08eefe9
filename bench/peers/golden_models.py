"""The forecasting models the peer scripts cover, in one place: each registered neural model
(nf_signatures.py takes its neuralforecast classes from here too) and the script that writes
its <model>_grad and <model>_train goldens (blocks_golden.py also
writes <model>.json for the stacked models; multi_output_golden.py, <model>_mq3_grad for
every one; recurrent_golden.py, <model>_recurrent_grad and _train for RNN, GRU and LSTM with
recurrent=True). tests/python/test_golden_models.py fails when this list and shoal's registry
differ. No import of torch or neuralforecast here: the test reads it without the peers."""

SCRIPTS = {
    "nlinear": "forecast_golden.py",
    "dlinear": "forecast_golden.py",
    "mlp": "forecast_golden.py",
    "mlp_multivariate": "forecast_golden.py",
    "nhits": "forecast_golden.py",
    "nbeats": "forecast_golden.py",
    "nbeatsx": "forecast_golden.py",
    "tide": "forecast_golden.py",
    "rnn": "forecast_golden.py",
    "gru": "forecast_golden.py",
    "lstm": "forecast_golden.py",
    "tcn": "forecast_golden.py",
    "dilated_rnn": "forecast_golden.py",
    "itransformer": "forecast_golden.py",
    "bitcn": "forecast_golden.py",
    "patchtst": "forecast_golden.py",
    "vanilla_transformer": "forecast_golden.py",
    "tsmixer": "tsmixer_golden.py",
    "tsmixerx": "tsmixer_golden.py",
}
MODELS = tuple(SCRIPTS)


def written_by(script):
    """The models whose goldens `script` (a file name) writes, in this list's order."""
    return [m for m, s in SCRIPTS.items() if s == script]
