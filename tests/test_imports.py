"""The package's import graph: no cycles, and the library never imports the command line.

The graph is read from the source (AST), not by importing: a node per module
under ``src/dptext``; an edge for every ``import`` / ``from ... import`` of
another dptext module, at module level or inside a function (a function-level
import is still a dependency, only a later one). ``from pkg import name``
points at ``pkg.name`` when that is a module, else at ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "dptext"
FRONT_ENDS = ("dptext.cli",)  # the command line: the package and every module in it
# The privacy core's layers, lowest first: a module may import its own layer or one below, never one above.
# Layer 0 is the foundation every layer uses (errors, text segmentation, the on-disk cache, ...).
LAYERS = (
    ("errors", "text", "cache", "names", "progress", "resources", "encoders"),
    ("spaces",),
    ("mechanisms",),
    ("privacy",),
    ("attacks",),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    files = {module_name(p): p for p in (src / PKG).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for t in targets:
                while t and t not in files and "." in t:  # "import dptext.x.y" of a name inside a module
                    t = t.rsplit(".", 1)[0]
                if t in files and t != mod and t.split(".")[0] == PKG:
                    graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _is_front_end(mod: str) -> bool:
    return any(mod == f or mod.startswith(f + ".") for f in FRONT_ENDS)


def test_the_graph_is_read_correctly():
    g = import_graph()
    assert "dptext.errors" in g["dptext.batch.corpus"]  # "from dptext.errors import DPTextError"
    assert "dptext.batch.output" in g["dptext.batch.pipeline"]
    assert "dptext.cli._common" in g["dptext.cli.core"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_library_never_imports_the_command_line():
    g = import_graph()
    bad = sorted(f"{mod} imports {dep}" for mod, deps in g.items() if not _is_front_end(mod)
                 for dep in deps if _is_front_end(dep))
    assert not bad, "library modules reaching up into the CLI: " + "; ".join(bad)


def layer_of(mod: str) -> int | None:
    """The layer index of ``dptext.<area>[...]``, or None for a module outside the layered core."""
    parts = mod.split(".")
    area = parts[1] if len(parts) > 1 else None
    return next((i for i, names in enumerate(LAYERS) if area in names), None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for mod, deps in graph.items():
        lo = layer_of(mod)
        for dep in deps:
            hi = layer_of(dep)
            if lo is not None and hi is not None and hi > lo:
                out.append(f"{mod} imports {dep}")
    return sorted(out)


def test_the_layer_rule_is_read_correctly():
    assert layer_of("dptext.spaces.base") == 1 and layer_of("dptext.attacks") == 4
    assert layer_of("dptext.cli.core") is None
    fake = {"dptext.spaces.base": {"dptext.mechanisms.calibration", "dptext.cache"},
            "dptext.attacks.knn": {"dptext.mechanisms.base"}, "dptext.cli.core": {"dptext.attacks.knn"}}
    assert upward_imports(fake) == ["dptext.spaces.base imports dptext.mechanisms.calibration"]


def test_no_upward_imports_between_layers():
    """spaces < mechanisms < privacy < attacks, function-level imports included."""
    bad = upward_imports(import_graph())
    assert not bad, "imports reaching up a layer: " + "; ".join(bad)


def test_every_cli_area_is_registered():
    """Each ``dptext/cli/<area>.py`` is loaded by the app, and each loaded name is a file there (a rename cannot
    silently drop a command: the loader skips names whose module is missing)."""
    from dptext.cli import COMMAND_MODULES

    files = {p.stem for p in (SRC / PKG / "cli").glob("*.py")} - {"__init__", "__main__", "_common"}
    assert set(COMMAND_MODULES) == files
    assert len(COMMAND_MODULES) == len(set(COMMAND_MODULES))
