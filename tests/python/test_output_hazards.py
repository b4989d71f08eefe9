"""Every Python save or write against the hazards that lose a user's file: a folder holding
other files, `.` and the folders above the current directory, an existing file, a read-only
folder, the model folder the object was loaded from, and two writers at once. Each is refused
(ValueError or FileExistsError, one line) or safe; either way the user's other files are
unchanged and nothing is left beside the output (no `*.tmp.*`, no hidden `.*.old.*`)."""

import os
import threading

import numpy as np
import pandas as pd
import pytest

import shoal

FAST = dict(max_steps=4, random_seed=3)


@pytest.fixture(scope="module")
def ncf():
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"user": rng.integers(0, 20, 300), "item": rng.integers(0, 30, 300)})
    return shoal.NCF(model="gmf", factors=4, epochs=1, threads=1).fit(train)


@pytest.fixture(scope="module")
def nf():
    from conftest import make_panel

    f = shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, **FAST)], freq="ME", workers=1)
    return f.fit(make_panel())


def _profile(path):
    from conftest import make_panel

    with shoal.profile("stats", out=path):
        shoal.NeuralForecast([shoal.NLinear(h=4, input_size=12, max_steps=2)], freq="ME",
                             workers=1).fit(make_panel())


# name -> (kind, writer(fixtures, path)). kind: "save" (a model folder), "file" (one file),
# "folder" (files written into a folder).
WRITERS = {
    "NCF.save": ("save", lambda m, f, p: m.save(p)),
    "NCF.save_weights": ("file", lambda m, f, p: m.save_weights(p)),
    "NeuralForecast.save": ("save", lambda m, f, p: f.save(p)),
    "NeuralForecast.save(overwrite=True)": ("save", lambda m, f, p: f.save(p, overwrite=True)),
    "model.save_weights": ("file", lambda m, f, p: f.models[0].save_weights(p)),
    "shoal.profile(out=)": ("folder", lambda m, f, p: _profile(p)),
}
REFUSED = (ValueError, FileExistsError, OSError)


def _snapshot(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def _leftovers(root):
    return [os.path.join(d, n) for d, dirs, files in os.walk(root) for n in dirs + files
            if ".tmp." in n or (n.startswith(".") and ".old." in n)]


def _outcome(write, *args):
    """'refused' (with a one-line message) or 'safe'."""
    try:
        write(*args)
    except REFUSED as e:
        assert "\n" not in str(e).strip(), str(e)
        return "refused"
    return "safe"


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder with the user's files: notes in `other/`, an existing file, and the
    current directory set inside it."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    (tmp_path / "existing.txt").write_text("an existing file")
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "data.csv").write_text("user,item\n1,2\n")
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


@pytest.mark.parametrize("name", WRITERS)
def test_a_folder_holding_other_files(name, ncf, nf, place):
    kind, write = WRITERS[name]
    before = _snapshot(place)
    got = _outcome(write, ncf, nf, str(place / "other"))
    assert got == ("safe" if kind == "folder" else "refused")
    after = _snapshot(place)
    assert {k: after[k] for k in before} == before
    assert not _leftovers(place)


@pytest.mark.parametrize("where", [".", "..", "cwd_absolute", "./", "../cwd"])
@pytest.mark.parametrize("name", WRITERS)
def test_the_current_directory_and_above_are_never_replaced(name, where, ncf, nf, place):
    kind, write = WRITERS[name]
    path = str(place / "cwd") if where == "cwd_absolute" else where
    before = _snapshot(place)
    got = _outcome(write, ncf, nf, path)
    assert got == ("safe" if kind == "folder" else "refused")
    after = _snapshot(place)
    assert {k: after[k] for k in before} == before
    assert os.path.isdir(place / "cwd") and not _leftovers(place)


@pytest.mark.parametrize("name", WRITERS)
def test_an_existing_file(name, ncf, nf, place):
    kind, write = WRITERS[name]
    got = _outcome(write, ncf, nf, str(place / "existing.txt"))
    if kind == "file":  # replaced whole, atomically
        assert got == "safe" and (place / "existing.txt").read_bytes()[:8] != b"an exist"
    else:
        assert got == "refused"
        assert (place / "existing.txt").read_text() == "an existing file"
    assert (place / "other" / "notes.txt").read_text() == "mine"
    assert not _leftovers(place)


@pytest.mark.parametrize("name", WRITERS)
def test_a_read_only_folder(name, ncf, nf, place):
    kind, write = WRITERS[name]
    ro = place / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    out = ro / "out"
    if os.access(ro, os.W_OK):  # root writes there anyway: a read-only file system stands in
        if not os.path.isdir("/proc/sys") or os.access("/proc/sys", os.W_OK):
            ro.chmod(0o755)
            pytest.skip("this user writes into read-only folders (root)")
        out = "/proc/sys/shoal-out"
    try:
        assert _outcome(write, ncf, nf, str(out)) == "refused"
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("name", WRITERS)
def test_two_writers_at_once(name, ncf, nf, place):
    kind, write = WRITERS[name]
    out, results = str(place / "race"), []

    def run():
        results.append(_outcome(write, ncf, nf, out))

    if kind == "folder":  # the profiler is one per process: run the two one after the other
        run()
        run()
    else:
        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert "safe" in results
    if name == "NCF.save":
        shoal.NCF.load(out)
    elif name.startswith("NeuralForecast.save"):
        shoal.NeuralForecast.load(out)
    assert not _leftovers(place)
    assert (place / "other" / "notes.txt").read_text() == "mine"


def test_saving_over_the_folder_a_model_was_loaded_from(ncf, nf, place):
    """The model folder being read: replaced only by a save of its own kind, whole."""
    ncf.save(place / "m")
    loaded = shoal.NCF.load(place / "m")
    loaded.save(place / "m")
    shoal.NCF.load(place / "m")
    nf.save(place / "f")
    f = shoal.NeuralForecast.load(place / "f")
    f.save(place / "f", overwrite=True)
    shoal.NeuralForecast.load(place / "f")
    # A save of the other kind is not replaced.
    with pytest.raises(ValueError, match="shoal.ncf"):
        nf.save(place / "m", overwrite=True)
    with pytest.raises(ValueError, match="shoal.forecaster"):
        ncf.save(place / "f")
    assert sorted(os.listdir(place)) == ["cwd", "existing.txt", "f", "m", "other"]
