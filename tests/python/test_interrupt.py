"""Ctrl-C during a long C++ fit raises KeyboardInterrupt promptly and leaves shoal usable."""

import os
import signal
import threading
import time

import pytest

import shoal
from conftest import make_panel


@pytest.mark.parametrize("per_series", [False, True])
def test_ctrl_c_stops_fit(per_series):
    df = make_panel(n_series=2)
    model = shoal.TSMixerx(h=4, input_size=12, n_series=1 if per_series else 2,
                           max_steps=10_000_000)  # hours if not stopped
    nf = shoal.NeuralForecast([model], freq="ME", per_series=per_series, workers=2)
    # Python's own Ctrl-C handler, whatever the test process was started with: a shell starts
    # background jobs with SIGINT ignored, and Python then leaves it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            nf.fit(df)
        assert time.monotonic() - t0 < 10
    finally:
        signal.signal(signal.SIGINT, previous)
    # Still usable afterwards.
    small = shoal.TSMixerx(h=4, input_size=12, n_series=2, max_steps=3)
    assert len(shoal.NeuralForecast([small], freq="ME").fit(df).predict()) == 8
