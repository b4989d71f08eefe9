"""A saved model directory: model.json (format, version, settings, the other files' sizes and
sha256) beside the files it lists. Written by the C++ I/O layer (core/file_io.h,
write_save_folder) whole into a sibling temporary directory, then swapped in with one atomic
exchange, so a reader sees the old model or the new one, never a mix; it replaces only an
earlier save of the same format (or an empty folder), never `.`, the current directory or a
folder holding other files. Read back with every file checked against model.json, any damage
raising one ModelFileError. write_file is the same layer for single files."""

from __future__ import annotations

import contextlib
import hashlib
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
    meta = {"format": fmt, "version": version, **meta, "files": {
        name: {"bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()}
        for name, b in files.items()}}
    entries = list(files.items()) + [("model.json", json.dumps(meta, indent=1).encode())]
    _core.write_save_folder(os.fspath(path), fmt, entries, what)


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
        raise ModelFileError(f"cannot load the model at {os.fspath(path)}: {e}") from e


def read(path, names, fmt=FORMAT, version=VERSION):
    """(model.json's dict, {name: bytes}) with each file's size and sha256 checked; names may
    be a function of model.json's dict (the files it lists); version may be a tuple of the
    versions read."""
    versions = version if isinstance(version, tuple) else (version,)
    with reading(path):
        try:
            with open(os.path.join(path, "model.json"), "rb") as f:
                meta = json.loads(f.read())
        except FileNotFoundError:
            raise ModelFileError(f"{os.fspath(path)} is not a saved shoal model (no model.json)")
        if not isinstance(meta, dict) or meta.get("format") != fmt:
            raise ModelFileError(f"{os.fspath(path)}/model.json is not a {fmt} model")
        if meta.get("version") not in versions:
            raise ModelFileError(f"{os.fspath(path)} is {fmt} version {meta.get('version')}; "
                                 f"this shoal reads version "
                                 f"{' or '.join(str(v) for v in versions)}")
        out = {}
        for name in (names(meta) if callable(names) else names):
            want = meta["files"].get(name)
            if want is None:
                raise ModelFileError(f"{os.fspath(path)}/model.json does not list {name}")
            if not os.path.exists(os.path.join(path, name)):
                raise ModelFileError(f"{os.fspath(path)}/{name} is missing")
            with open(os.path.join(path, name), "rb") as f:
                b = f.read()
            if len(b) != want["bytes"] or hashlib.sha256(b).hexdigest() != want["sha256"]:
                raise ModelFileError(f"{os.fspath(path)}/{name} is damaged: its size or "
                                     f"checksum differs from model.json's")
            out[name] = b
        return meta, out
