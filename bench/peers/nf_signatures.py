"""Writes python/shoal/_nf_signatures.json: the arguments of neuralforecast's public API.

shoal's forecasting models take their signatures from this file (python/shoal/models.py), and
tests/python/test_signatures.py walks it to check that every argument is either honoured or
refused by name. It is made from neuralforecast's source with `ast`, without importing it:

    python3 bench/peers/nf_signatures.py /opt/peers/lib/python3.11/site-packages

(the directory holding the installed neuralforecast/ package, 3.3.0 as pip serves it, or a
checkout of its repository).

Each argument is [name, default]; a required one has no default, `**kwargs` is ["**name"].
A default that is a literal is stored as JSON; one that is a call such as `MAE()` is stored as
{"call": "MAE"}, and a constant expression such as `3 * [[512, 512]]` as its value.
"""

import ast
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_models import MODELS as REGISTRY_MODELS  # noqa: E402  (the registry's neural models)

NEURALFORECAST_METHODS = ("__init__", "fit", "predict", "cross_validation", "predict_insample",
                          "make_future_dataframe", "get_missing_future", "save", "load")


def default_value(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args \
            and not node.keywords:
        return {"call": node.func.id}
    # A constant expression of literals (3 * [[512, 512]]): evaluated without any names.
    code = compile(ast.Expression(node), "<default>", "eval")
    if code.co_names:
        raise ValueError(f"default {ast.unparse(node)!r} is not a constant")
    return eval(code, {"__builtins__": {}})  # noqa: S307 (names checked above)


def arguments(fn):
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for a, d in zip(positional, defaults):
        if a.arg == "self":
            continue
        out.append([a.arg] if d is None else [a.arg, default_value(d)])
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append([a.arg] if d is None else [a.arg, default_value(d)])
    if args.kwarg is not None:
        out.append(["**" + args.kwarg.arg])
    return out


def class_methods(path, class_name, names):
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {fn.name: arguments(fn) for fn in node.body
                    if isinstance(fn, ast.FunctionDef) and fn.name in names}
    raise SystemExit(f"{path}: no class {class_name}")


def model_files(models_dir):
    """[(class, file)] of the registry's models, in the registry's order: the class defined in
    neuralforecast/models whose name, lowercased, is the registry's name without underscores
    (mlp_multivariate: MLPMultivariate), as forecast_golden.py finds it."""
    wanted = {name.replace("_", ""): name for name in REGISTRY_MODELS}
    found = {}
    for file in sorted(os.listdir(models_dir)):
        if file.endswith(".py"):
            with open(os.path.join(models_dir, file)) as f:
                tree = ast.parse(f.read())
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name.lower() in wanted:
                    found[wanted[node.name.lower()]] = (node.name, file)
    missing = [name for name in REGISTRY_MODELS if name not in found]
    if missing:
        raise SystemExit(f"no neuralforecast class for {missing} in {models_dir}")
    return [found[name] for name in REGISTRY_MODELS]


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    src = sys.argv[1]
    pkg = os.path.join(src, "neuralforecast")
    if not os.path.isdir(pkg):
        raise SystemExit(f"{src} holds no neuralforecast/ package directory")
    out = {"neuralforecast": "3.3.0", "models": {}, "NeuralForecast": {}}
    for cls, file in model_files(os.path.join(pkg, "models")):
        out["models"][cls] = class_methods(os.path.join(pkg, "models", file), cls,
                                           {"__init__"})["__init__"]
    methods = class_methods(os.path.join(pkg, "core.py"), "NeuralForecast",
                            set(NEURALFORECAST_METHODS))
    out["NeuralForecast"] = {m: methods[m] for m in NEURALFORECAST_METHODS}
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, "..", "..", "python", "shoal", "_nf_signatures.json")
    with open(dest + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(dest + ".tmp", dest)
    print(f"wrote {os.path.normpath(dest)}: {len(out['models'])} models, "
          f"{len(out['NeuralForecast'])} NeuralForecast methods")


if __name__ == "__main__":
    main()
