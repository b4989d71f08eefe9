"""A saved model directory: model.json (format, version, settings, the other files' sizes and
sha256) beside the files it lists, written and read by the C++ implementation
(core/model_folder.h): written whole into a sibling temporary directory, then swapped in with
one atomic exchange, so a reader sees the old model or the new one, never a mix; it replaces
only an earlier save of the same format (or an empty folder), never `.`, the current directory
or a folder holding other files. Read back with every file checked against model.json, any
damage raising one ModelFileError. write_file is the same layer for single files."""

from __future__ import annotations

import contextlib
import json
import os

from . import _core

FORMAT, VERSION = "shoal.ncf", 1


class ModelFileError(ValueError):
    """A saved model that cannot be read: missing, damaged, or not a shoal model."""


def ids_json(ids):
    return json.dumps({"ids": ids}, separators=(",", ":")).encode()


def ids_from_json(blob):
    ids = json.loads(blob)["ids"]
    if not isinstance(ids, list):
        raise ValueError("ids must be a list")
    return ids


def check(path, fmt=FORMAT, what="path"):
    """Raises ValueError (one line) unless write(path, ..., fmt) may write there."""
    _core.check_save_folder(os.fspath(path), fmt, [], what)


def write(path, meta, files, fmt=FORMAT, version=VERSION, what="path"):
    """model.json ({"format", "version", **meta, "files": each file's bytes and sha256}) and
    `files` ({name: bytes}) into the folder `path` (core/model_folder.h)."""
    _core.write_model_folder(os.fspath(path), fmt, version, json.dumps(meta),
                             [(name, bytes(b)) for name, b in files.items()], what)


def write_file(path, data, what="path"):
    """`data` (bytes) into the file `path`, atomically: a reader sees the old file or the new."""
    _core.write_file(os.fspath(path), bytes(data), [], what)


@contextlib.contextmanager
def reading(path):
    """Any error inside becomes a ModelFileError naming the model directory."""
    try:
        yield
    except ModelFileError:
        raise
    except Exception as e:  # noqa: BLE001 - the one error a damaged model gives
        if str(e).startswith("cannot load the model at"):  # the C++ reader's, already located
            raise ModelFileError(str(e)) from e
        raise ModelFileError(f"cannot load the model at {os.fspath(path)}: {e}") from e


def read(path, names, fmt=FORMAT, version=VERSION):
    """(model.json's dict, {name: bytes}) with every file model.json lists checked against its
    size and sha256 (core/model_folder.h); names (or a function of model.json's dict giving
    them) must be among them; version may be a tuple of the versions read."""
    versions = version if isinstance(version, tuple) else (version,)
    with reading(path):
        manifest, listed = _core.read_model_folder(os.fspath(path), fmt, list(versions))
        meta, files = json.loads(manifest), dict(listed)
        out = {}
        for name in (names(meta) if callable(names) else names):
            if name not in files:
                raise ModelFileError(f"cannot load the model at {os.fspath(path)}: model.json "
                                     f"does not list {name}")
            out[name] = files[name]
        return meta, out
