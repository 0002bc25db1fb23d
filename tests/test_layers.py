"""The package's shape (docs/architecture.md): its folders follow the data flow, every import points
down the layers, no two modules import each other (directly or round a loop), no module is over
400 lines.

The imports are read from the source with `ast` (nothing is imported), relative and absolute
`mpsched.*` imports alike, at module level and inside functions. Importing `a.b.c` also runs the
packages `a` and `a.b` first; those implicit parent imports are not edges (Python runs a
package's `__init__` before its modules, so they cannot form a loop of half-initialised
modules).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "mpsched"

#: The layers, bottom first: a module may import from its own layer or an earlier one.
#: `sched` (the Python scheduler API) and `registry` (the core's scheduler catalogue) are at the
#: bottom: the scenario checks scheduler names against them and the simulator engine calls
#: Python schedulers through `sched`; neither imports anything of the package but the core.
#: `mpsched.metrics` is the old name of `mpsched.analysis.metrics`, kept for users.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("mpsched._core", "mpsched.sched", "mpsched.registry")),
    ("scenario", ("mpsched.scenario",)),
    ("engines", ("mpsched.engines",)),
    ("study", ("mpsched.study",)),
    ("analysis", ("mpsched.analysis", "mpsched.metrics")),
    ("experiments", ("mpsched.experiments",)),
    ("top", ("mpsched.cli", "mpsched.__main__", "mpsched")),
]

#: Upward imports allowed, each inside a function only (never at module level): `Results.summary()`
#: and `Results.plot()` are conveniences that call into analysis when used. They are left out of
#: the cycle check (analysis imports `Results` from below).
ALLOWED_LAZY_UP = {
    ("mpsched.study.results", "mpsched.analysis.summary"),
    ("mpsched.study.results", "mpsched.analysis.figures"),
}

MAX_LINES = 400


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    lazy: bool  # inside a function (runs when called, not when the module loads)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(source: str, module: str, is_package: bool, modules: set[str]) -> list[Import]:
    """Every `mpsched` import of a module's source, as edges to the modules it names: `from
    pkg import sub` is an edge to `pkg.sub` when that is a module, else to `pkg`."""
    tree = ast.parse(source)
    out: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    if a.name == "mpsched" or a.name.startswith("mpsched."):
                        out.append(Import(module, a.name, child.lineno, lazy))
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(child, module, is_package)
                if target == "mpsched" or target.startswith("mpsched."):
                    for a in child.names:
                        sub = f"{target}.{a.name}"
                        out.append(Import(module, sub if sub in modules else target, child.lineno, lazy))
            visit(child, inner)

    visit(tree, False)
    return out


def _type_checking_lines(source: str) -> set[int]:
    """Lines inside `if TYPE_CHECKING:` blocks (annotations only; never run)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for n in node.body:
                lines.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    return lines


def package_imports(root: Path = PACKAGE) -> tuple[set[str], list[Import]]:
    files = sorted(root.rglob("*.py"))
    modules = {module_name(f, root) for f in files} | {"mpsched._core"}
    edges = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        skip = _type_checking_lines(text)
        edges += [e for e in imports_of(text, module_name(f, root), f.name == "__init__.py", modules)
                  if e.line not in skip]
    return modules, edges


def layer_of(module: str, layers=LAYERS) -> int:
    """The index of the layer owning `module` (longest matching prefix)."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise KeyError(f"{module} belongs to no layer; add it to LAYERS")
    return best


def upward(edges: list[Import], layers=LAYERS, allowed=frozenset()) -> list[str]:
    """Imports that run up the layers: any at module level; inside a function unless allowed."""
    bad = []
    for e in edges:
        if layer_of(e.target, layers) > layer_of(e.source, layers):
            if e.lazy and (e.source, e.target) in allowed:
                continue
            where = "inside a function" if e.lazy else "at module level"
            bad.append(f"{e.source}:{e.line} imports {e.target} {where} "
                       f"({layers[layer_of(e.source, layers)][0]} -> {layers[layer_of(e.target, layers)][0]})")
    return bad


def cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """The import loops: every strongly connected component of more than one module (or a module
    importing itself), each as a sorted list (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
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
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


# --- the checker on graphs whose answer is known ------------------------------------------------


def test_the_cycle_finder_finds_a_loop_and_nothing_else():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("f", "f")]
    assert sorted(cycles(edges)) == [["a", "b", "c"], ["f"]]
    assert cycles([("a", "b"), ("b", "c"), ("a", "c")]) == []


def test_the_layer_check_flags_an_upward_import_and_allows_only_listed_lazy_ones():
    layers = [("low", ("p.low",)), ("high", ("p.high",))]
    edges = [Import("p.high.x", "p.low.y", 1, False),  # down: fine
             Import("p.low.y", "p.high.x", 2, False),  # up at module level
             Import("p.low.y", "p.high.x", 3, True),  # up, lazy, not allowed
             Import("p.low.z", "p.high.x", 4, True)]  # up, lazy, allowed
    bad = upward(edges, layers, allowed={("p.low.z", "p.high.x")})
    assert [b.split(" ")[0] for b in bad] == ["p.low.y:2", "p.low.y:3"]
    with pytest.raises(KeyError):
        layer_of("p.elsewhere", layers)


def test_imports_are_resolved_relative_absolute_and_inside_functions():
    src = ("from . import b\nfrom .c import x\nimport mpsched.d\nimport os\n"
           "def f():\n    from mpsched.e import y\n")
    mods = {"mpsched.pkg", "mpsched.pkg.a", "mpsched.pkg.b", "mpsched.pkg.c", "mpsched.d", "mpsched.e"}
    got = [(i.target, i.lazy) for i in imports_of(src, "mpsched.pkg.a", False, mods)]
    assert got == [("mpsched.pkg.b", False), ("mpsched.pkg.c", False), ("mpsched.d", False), ("mpsched.e", True)]


# --- the package -------------------------------------------------------------------------------


def test_every_module_belongs_to_a_layer():
    modules, _ = package_imports()
    for m in modules:
        layer_of(m)


def test_no_import_runs_up_the_layers():
    _, edges = package_imports()
    assert upward(edges, allowed=ALLOWED_LAZY_UP) == []


def test_the_allowed_upward_imports_are_inside_functions_and_still_exist():
    _, edges = package_imports()
    used = {(e.source, e.target) for e in edges if e.lazy}
    assert ALLOWED_LAZY_UP <= used, "an allowed lazy import is gone: drop it from ALLOWED_LAZY_UP"


def test_the_package_has_no_import_cycle():
    _, edges = package_imports()
    graph = [(e.source, e.target) for e in edges if (e.source, e.target) not in ALLOWED_LAZY_UP]
    assert cycles(graph) == []


def test_no_module_is_over_400_lines():
    long = {str(f.relative_to(PACKAGE)): n for f in PACKAGE.rglob("*.py")
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_modules_that_moved_still_find_the_repository_files_they_read(monkeypatch):
    """Paths relative to a module's own file (the kernel's native tools, the vendored flow-size
    distributions, the reproduction studies) point at the repository's folders."""
    from mpsched.engines.kernel.host import _native_dir
    from mpsched.experiments.studies import ROOT
    from mpsched.scenario.datacenter import DATA_DIR

    monkeypatch.delenv("MPSCHED_NATIVE_DIR", raising=False)
    repo = PACKAGE.parents[1]
    assert _native_dir() == repo / "native" and (_native_dir() / "Makefile").is_file()
    assert DATA_DIR == repo / "scenarios" / "data" / "datacenter-flowsize" and (DATA_DIR / "DCTCP_CDF").is_file()
    assert ROOT == repo / "experiments" and ROOT.is_dir()
