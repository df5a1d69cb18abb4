"""No import cycles among glassformer's modules, and no import from a lower floor to a higher.

Every module under src/glassformer is parsed (``ast``; nothing is imported) and each import it
makes is an edge: at module level, inside functions and under ``if TYPE_CHECKING:`` alike (a
lazy import is still a cycle, only one that Python happens to survive; an import for types only
is still a circle a reader has to follow).
``import a.b`` is an edge to ``a.b``; ``from a import x`` an edge to ``a`` (its ``__init__``)
and, when ``x`` is a submodule, to ``a.x`` too; relative imports are resolved against the
importing module's package. Importing ``a.b`` runs the package ``a`` first, so that is an edge
too, except to the importer's own packages: Python has them in ``sys.modules`` already, half
run, and every submodule would make a cycle with an ``__init__`` that imports it back.

The package's top-level modules and subpackages stand on floors (``FLOORS``, lowest first): a
module imports only from its own top-level package or from a floor below its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "glassformer"

Edge = tuple[str, str, str]  # (importer, imported, "file:line")

# glassformer's top-level modules and subpackages, lowest floor first ("glassformer" is the
# package's own __init__). Each imports only from floors below its own.
FLOORS: list[tuple[str, ...]] = [
    # plain Python: bounds, what errors name, the command line's names, preset shapes,
    # progress, writes, parsing, tasks, the drawers the package registers
    ("limits", "named", "names", "preset_shapes", "progress", "safe_write", "structured", "tasks",
     "drawing"),
    ("graphs", "machine", "tokenizers"),  # graph algebra and kernels; the machine's memory; text
    ("nn",),  # the layers of the notes
    ("fast",),  # the fast paths over nn
    ("models",),  # ModelConfig and the models built from it
    ("circuits", "data", "finetune", "generation", "interop", "presets"),  # what uses a model
    ("inspect", "predict", "training"),  # looking inside; classify and fill-mask; training
    ("explore", "runs"),
    ("cli",),
    ("examples",),  # worked examples, end to end: commands that train through runs, as cli's
    ("__main__", "glassformer"),
]


def modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of ``package`` under ``root``."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _import_nodes(nodes):
    """Every Import / ImportFrom in ``nodes`` and below, ``if TYPE_CHECKING:`` included."""
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _import_nodes(ast.iter_child_nodes(node))


def imports_of(name: str, path: Path, root: Path, known: dict[str, Path]) -> list[Edge]:
    """The edges from module ``name`` (file ``path`` under ``root``) to those in ``known``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in _import_nodes([tree]):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        where = f"{path.relative_to(root).as_posix()}:{node.lineno}"
        for target in dict.fromkeys(t for named in targets for t in _with_packages(named)):
            own_package = name.startswith(target + ".")
            if target in known and target != name and not own_package:
                edges.append((name, target, where))
    return edges


def _with_packages(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages first."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def import_graph(root: Path, package: str = PACKAGE) -> dict[str, list[Edge]]:
    known = modules(root, package)
    return {name: imports_of(name, path, root, known) for name, path in known.items()}


def find_cycles(graph: dict[str, list[Edge]]) -> list[list[Edge]]:
    """One cycle (its edges, in order) through each group of modules that import each other
    (each strongly connected component of more than one module; Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for _, w, _ in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, set(c), c[0]) for c in components]


def _cycle_in(graph: dict[str, list[Edge]], component: set[str], start: str) -> list[Edge]:
    """The shortest cycle through ``start`` inside ``component`` (breadth-first search)."""
    came_by: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for edge in graph[v]:
                w = edge[1]
                if w not in component or w in came_by:
                    continue
                came_by[w] = edge
                if w == start:
                    path, node = [], start
                    while True:
                        path.append(came_by[node])
                        node = came_by[node][0]
                        if node == start:
                            return path[::-1]
                following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")  # pragma: no cover - Tarjan found one


def top_level(name: str, package: str = PACKAGE) -> str:
    """``glassformer.nn.blocks`` -> ``nn``; the package itself -> ``glassformer``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else package


def upward_imports(graph: dict[str, list[Edge]], floors: list[tuple[str, ...]]) -> list[str]:
    """Each import from a top-level package to another on its own floor or above, and each
    top-level package on no floor."""
    floor = {name: i for i, names in enumerate(floors) for name in names}
    found = [f"{name} is on no floor of FLOORS" for name in sorted({top_level(m) for m in graph})]
    found = [line for line in found if line.split()[0] not in floor]
    for edges in graph.values():
        for a, b, where in sorted(edges):
            low, high = top_level(a), top_level(b)
            if low != high and low in floor and high in floor and floor[high] >= floor[low]:
                found.append(f"  {a} (floor {floor[low]}) -> {b} (floor {floor[high]})  ({where})")
    return found


def describe(cycle: list[Edge]) -> str:
    return "\n".join(f"  {a} -> {b}  ({where})" for a, b, where in cycle)


def test_no_import_cycles():
    cycles = find_cycles(import_graph(SRC))
    message = "\n\n".join(f"import cycle:\n{describe(c)}" for c in cycles)
    assert not cycles, message


def test_nothing_below_imports_something_above():
    found = upward_imports(import_graph(SRC), FLOORS)
    assert not found, "imports against FLOORS (lowest first):\n" + "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_lazy_cycle_and_a_type_checking_cycle_are_found(tmp_path):
    _write(
        tmp_path,
        {
            "glassformer/__init__.py": "",
            "glassformer/a/__init__.py": "from .base import Model\n",
            "glassformer/a/base.py": "def save():\n    from .store import write\n",
            "glassformer/a/store.py": "from .base import Model\n",
            "glassformer/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from glassformer.c import C\n"
            ),
            "glassformer/c.py": "from glassformer import b\n",
        },
    )
    cycles = find_cycles(import_graph(tmp_path))
    assert cycles == [
        [
            ("glassformer.a.base", "glassformer.a.store", "glassformer/a/base.py:2"),
            ("glassformer.a.store", "glassformer.a.base", "glassformer/a/store.py:1"),
        ],
        [
            ("glassformer.b", "glassformer.c", "glassformer/b.py:3"),
            ("glassformer.c", "glassformer.b", "glassformer/c.py:1"),
        ],
    ]


def test_an_upward_import_and_a_package_on_no_floor_are_reported(tmp_path):
    _write(
        tmp_path,
        {
            "glassformer/__init__.py": "",
            "glassformer/low.py": "def f():\n    import glassformer.high\n",
            "glassformer/high/__init__.py": "from ..low import f\n",
            "glassformer/high/g.py": "from . import h\n",
            "glassformer/high/h.py": "",
            "glassformer/side.py": "from .low import f\n",
            "glassformer/stray.py": "",
        },
    )
    floors = [("low",), ("high", "side"), ("glassformer",)]
    assert upward_imports(import_graph(tmp_path), floors) == [
        "stray is on no floor of FLOORS",
        "  glassformer.low (floor 0) -> glassformer.high (floor 1)  (glassformer/low.py:2)",
    ]
    floors = [("low", "side"), ("high",), ("glassformer", "stray")]
    assert upward_imports(import_graph(tmp_path), floors) == [
        "  glassformer.low (floor 0) -> glassformer.high (floor 1)  (glassformer/low.py:2)",
        "  glassformer.side (floor 0) -> glassformer.low (floor 0)  (glassformer/side.py:1)",
    ]


def test_a_submodule_import_is_an_edge_to_it_and_to_its_package(tmp_path):
    _write(
        tmp_path,
        {
            "glassformer/__init__.py": "",
            "glassformer/p/__init__.py": "from ..q import helper\n",
            "glassformer/p/mod.py": "",
            "glassformer/q.py": "from .p import mod\n\ndef helper():\n    pass\n",
            "glassformer/r.py": "import glassformer.p.mod\n",
        },
    )
    graph = import_graph(tmp_path)
    assert [e[1] for e in graph["glassformer.r"]] == ["glassformer.p", "glassformer.p.mod"]
    assert [e[1] for e in graph["glassformer.q"]] == ["glassformer.p", "glassformer.p.mod"]
    assert [e[1] for e in graph["glassformer.p"]] == ["glassformer.q"]
    (cycle,) = find_cycles(graph)
    assert {e[0] for e in cycle} == {"glassformer.p", "glassformer.q"}
