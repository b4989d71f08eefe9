"""safetensors bytes <-> {name: numpy array}, without copying the tensor data.

Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
data_offsets}}, then the data. shoal writes F32; F64 and F16/BF16 are read too (as views for F32
and F64).
"""

from __future__ import annotations

import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
           "I32": np.int32}


def decode(blob: bytes) -> dict:
    if len(blob) < 8:
        raise ValueError(f"not a safetensors blob: {len(blob)} bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"safetensors header of {n} bytes runs past the {len(blob)}-byte blob")
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(t["dtype"])
        if dtype is None:
            raise ValueError(f"tensor {name!r}: dtype {t['dtype']} is not supported")
        begin, end = t["data_offsets"]
        shape = tuple(t["shape"])
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * np.dtype(dtype).itemsize or end > len(data):
            raise ValueError(f"tensor {name!r}: offsets {begin}..{end} disagree with shape {shape}")
        out[name] = np.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(shape)
    return out


def encode(tensors: dict, metadata: dict | None = None) -> bytes:
    """{name: array} as safetensors bytes (names in the given order): int32 and int64 arrays as
    I32 / I64, everything else as F32."""
    header, chunks, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.asarray(a)
        code = {np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}.get(a.dtype, "F32")
        a = np.ascontiguousarray(a, dtype=a.dtype if code != "F32" else np.float32)
        header[name] = {"dtype": code, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        chunks.append(a.tobytes())
        offset += a.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)
