"""The package's modules form layers: no module imports one that imports it back, directly or
through others, at the top of the file or inside a function (a cycle hidden in a function is
still a cycle: the two modules cannot be understood, or tested, one without the other)."""
import ast
import os

import shoal


def _imports():
    root = os.path.dirname(shoal.__file__)
    modules = {f[:-3] for f in os.listdir(root) if f.endswith(".py")}
    graph = {}
    for m in modules:
        with open(os.path.join(root, m + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                deps.update(n.split(".")[0] for n in names)
        graph[m] = deps & modules - {m}
    return graph


def _cycle(graph):
    """One cycle of graph as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    graph = _imports()
    assert {"core", "models", "auto", "_auto"} <= set(graph)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
