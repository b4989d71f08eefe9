"""safetensors bytes <-> {name: numpy array}, through the C++ codec (train/safetensors.h), the
one implementation shoal has: the header is parsed and checked there (dtypes F32, F64, I32 and
I64; shapes against offsets; no overlaps) and the tensors are numpy views of the bytes, not
copies."""

from __future__ import annotations

import numpy as np

from . import _core

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def decode(blob: bytes) -> dict:
    start, entries, _ = _core.safetensors_index(blob)
    data = memoryview(blob)[start:]
    out = {}
    for name, dtype, shape, begin, end in entries:
        dtype = np.dtype(_DTYPES[dtype])
        count = (end - begin) // dtype.itemsize
        out[name] = np.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(shape)
    return out


def encode(tensors: dict, metadata: dict | None = None) -> bytes:
    """{name: array} as safetensors bytes (names in the given order): int32 and int64 arrays as
    I32 / I64, everything else as F32."""
    arrays = []
    for name, a in tensors.items():
        a = np.asarray(a)
        if a.dtype not in (np.int32, np.int64):
            a = a.astype(np.float32, copy=False)
        arrays.append((name, np.ascontiguousarray(a)))
    return _core.safetensors_encode(arrays, {str(k): str(v) for k, v in (metadata or {}).items()})
