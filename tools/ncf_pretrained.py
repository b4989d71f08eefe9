#!/usr/bin/env python3
"""The NCF authors' pretrained ml-1m weights (Keras 1 HDF5) for shoal.

  convert IN.h5 OUT.safetensors --model gmf|mlp   one file to shoal's parameter names
  neumf GMF.h5 MLP.h5 OUT.safetensors [--alpha .5] NeuMF built from both (paper §3.4.1)
  check --shoal BIN --data DIR --tmp DIR          the suite's test: convert, score with
                                                  `shoal ncf eval`, compare with the published
                                                  HR@10 / NDCG@10 (tolerance 0.002)

Needs numpy and h5py (Debian: python3-h5py, installed by tools/install-deps.sh). Keras stores
Dense kernels as [in, out]; shoal (like torch.nn.Linear) stores [out, in], so they are
transposed. The safetensors writer here is independent of shoal's, which makes the test also
check that shoal reads files it did not write.
"""
import argparse
import json
import os
import subprocess
import sys

import h5py
import numpy as np

GMF_PREFIX = "ml-1m_GMF_8_1501651698.h5"
MLP_PREFIX = "ml-1m_MLP_[64,32,16,8]_1501652038.h5"
# (HR@10, NDCG@10) published / measured with the reference protocol (shared/data/ncf/README.md).
EXPECTED = {"gmf": (0.637, 0.369), "mlp": (0.671, 0.396), "neumf": (0.6710, 0.3969)}
TOL = 0.002


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        blobs.append(arr.tobytes())
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


def keras_weights(path, model):
    h = h5py.File(path, "r")
    g = lambda n: np.array(h[n])  # noqa: E731
    kind = "gmf" if model == "gmf" else "mlp"
    out = {f"embed_user_{kind}.weight": g("user_embedding/user_embedding_W"),
           f"embed_item_{kind}.weight": g("item_embedding/item_embedding_W")}
    if model == "mlp":
        k = 1
        while f"layer{k}" in h:
            out[f"mlp.{k - 1}.weight"] = g(f"layer{k}/layer{k}_W").T
            out[f"mlp.{k - 1}.bias"] = g(f"layer{k}/layer{k}_b")
            k += 1
    out["predict.weight"] = g("prediction/prediction_W").T
    out["predict.bias"] = g("prediction/prediction_b")
    return out


def neumf_weights(gmf_path, mlp_path, alpha):
    gmf, mlp = keras_weights(gmf_path, "gmf"), keras_weights(mlp_path, "mlp")
    out = {k: v for k, v in {**gmf, **mlp}.items() if not k.startswith("predict.")}
    out["predict.weight"] = np.concatenate(
        [alpha * gmf["predict.weight"], (1 - alpha) * mlp["predict.weight"]], axis=1)
    out["predict.bias"] = alpha * gmf["predict.bias"] + (1 - alpha) * mlp["predict.bias"]
    return out


def check(args):
    os.makedirs(args.tmp, exist_ok=True)
    pre = os.path.join(args.data, "ncf", "pretrain")
    files = {"gmf": keras_weights(os.path.join(pre, GMF_PREFIX), "gmf"),
             "mlp": keras_weights(os.path.join(pre, MLP_PREFIX), "mlp"),
             "neumf": neumf_weights(os.path.join(pre, GMF_PREFIX),
                                    os.path.join(pre, MLP_PREFIX), 0.5)}
    failed = False
    for model, tensors in files.items():
        st = os.path.join(args.tmp, f"ml-1m_{model}.safetensors")
        metrics = os.path.join(args.tmp, f"ml-1m_{model}.json")
        write_safetensors(st, tensors)
        cmd = [args.shoal, "ncf", "eval", "--model", model, "--factors", "8",
               "--layers", "64,32,16,8", "--weights", st,
               "--test", os.path.join(args.data, "ncf", "ml-1m.test.rating"),
               "--test-negatives", os.path.join(args.data, "ncf", "ml-1m.test.negative"),
               "--threads", "2", "--metrics-out", metrics]
        subprocess.run(cmd, check=True)
        with open(metrics) as f:
            m = json.load(f)
        hr, ndcg = EXPECTED[model]
        ok = abs(m["hr@10"] - hr) <= TOL and abs(m["ndcg@10"] - ndcg) <= TOL
        print(f"{model}: HR@10 {m['hr@10']:.4f} (expected {hr}) NDCG@10 {m['ndcg@10']:.4f} "
              f"(expected {ndcg}) {'ok' if ok else 'FAILED'}")
        failed |= not ok
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("h5")
    c.add_argument("out")
    c.add_argument("--model", choices=["gmf", "mlp"], required=True)
    n = sub.add_parser("neumf")
    n.add_argument("gmf")
    n.add_argument("mlp")
    n.add_argument("out")
    n.add_argument("--alpha", type=float, default=0.5)
    k = sub.add_parser("check")
    k.add_argument("--shoal", required=True)
    k.add_argument("--data", required=True)
    k.add_argument("--tmp", required=True)
    a = p.parse_args()
    if a.cmd == "convert":
        write_safetensors(a.out, keras_weights(a.h5, a.model))
    elif a.cmd == "neumf":
        write_safetensors(a.out, neumf_weights(a.gmf, a.mlp, a.alpha))
    else:
        return check(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
