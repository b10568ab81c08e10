"""The house's health: imports run one way, and every import inside a
function says why it is there.

Each module of fuzz/ and strategies/ sits in a layer (`LAYERS`, lowest
first): it may import its own layer and those below, never one above, and
no module reaches itself through its imports (module-level or not).
docs/ARCHITECTURE.md draws the same picture.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (module name prefix, layer): the longest prefix that fits decides.
LAYERS = (
    ("fuzz", 0), ("fuzz.compat", 0), ("fuzz.atomic", 0), ("fuzz.exits", 0),
    ("fuzz.measurements", 0), ("fuzz.severity", 0),
    ("fuzz.ir", 1), ("fuzz.elements", 1), ("strategies", 1), ("strategies.semaphores", 1),
    ("strategies.transforms", 1),
    ("fuzz.ops", 2),
    ("fuzz.model", 3), ("fuzz.emit", 3), ("fuzz.blame", 3), ("fuzz.serialize", 3),
    ("fuzz.paths", 4),
    ("fuzz.suppressions", 5), ("fuzz.oracles", 5),
    ("strategies.programs", 6),
    ("fuzz.triage", 7),
    ("fuzz.campaign", 8),
    ("fuzz.cli", 9), ("fuzz.bench", 9), ("fuzz.bench_campaign", 9),
    ("fuzz.bench_releases", 9), ("fuzz.bench_suite", 9), ("fuzz.rediscovery", 9),
)
NAMES = ("layer 0: compat, atomic, exits", "layer 1: ir and the leaf strategies", "layer 2: ops",
         "layer 3: model, emit, blame, serialize", "layer 4: paths",
         "layer 5: oracles, suppressions", "layer 6: strategies.programs", "layer 7: triage",
         "layer 8: campaign", "layer 9: cli, benchmarks")


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for top in ("fuzz", "strategies"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def layer(module: str) -> int:
    fits = [(len(prefix), n) for prefix, n in LAYERS
            if module == prefix or module.startswith(prefix + ".")]
    if not fits:
        raise AssertionError(f"{module} is in no layer: add it to tests/test_layers.py LAYERS")
    return max(fits)[1]


def _imports(module: str):
    """(imported project module, line, inside a function) for each import."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield from _resolve(alias.name, (), child.lineno, inner)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - child.level + 1]
                                    + ([base] if base else []))
                yield from _resolve(base, [a.name for a in child.names], child.lineno, inner)
            else:
                yield from visit(child, inner)
    yield from visit(tree, False)


def _resolve(base: str, names, line: int, in_function: bool):
    """The project modules an import names; a function-level import of any
    other module as None (its comment is checked all the same)."""
    if base.split(".")[0] not in ("fuzz", "strategies"):
        if in_function:
            yield None, line, in_function
        return
    targets = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
    for target in targets or ([base] if base in MODULES else []):
        yield target, line, in_function


GRAPH = {m: sorted({t for t, _, _ in _imports(m) if t is not None} - {m}) for m in MODULES}


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)


def upward(graph: dict[str, list[str]]) -> list[str]:
    """The imports in ``graph`` (module -> modules it imports) that go up."""
    return [f"{m} ({NAMES[layer(m)]}) imports {t} ({NAMES[layer(t)]})"
            for m, targets in graph.items() for t in targets if layer(t) > layer(m)]


def cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One import cycle in ``graph``, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in graph.get(m, ()):
            if state.get(t) == "open":
                return stack[stack.index(t):] + [t]
            if t not in state and (found := visit(t)):
                return found
        state[m] = "done"
        stack.pop()
        return None
    return next((c for m in graph if m not in state and (c := visit(m))), None)


def test_imports_run_one_way():
    found = upward(GRAPH)
    assert not found, "\n".join(found)


def test_no_import_cycle():
    found = cycle(GRAPH)
    assert found is None, " -> ".join(found)


def test_an_import_inside_a_function_says_why():
    """Its line (or the one above) carries a comment: the reason is, almost
    always, keeping JAX out of the command line's start-up."""
    silent = []
    for m, path in MODULES.items():
        lines = path.read_text().splitlines()
        for _, line, in_function in _imports(m):
            text, above = lines[line - 1], lines[line - 2].strip() if line > 1 else ""
            if in_function and "#" not in text and not above.startswith("#"):
                silent.append(f"{path.relative_to(ROOT)}:{line}: {text.strip()}")
    assert not silent, "\n".join(silent)


def test_the_checks_see_an_upward_import_and_a_cycle():
    """A test that cannot fail is a defect: each check reports what it is for."""
    graph = {"fuzz.ir": ["fuzz.ops.base"], "fuzz.ops.base": ["fuzz.ir"], "fuzz.cli": ["fuzz.ir"]}
    assert upward(graph) == [f"fuzz.ir ({NAMES[1]}) imports fuzz.ops.base ({NAMES[2]})"]
    assert cycle(graph) == ["fuzz.ir", "fuzz.ops.base", "fuzz.ir"]
    assert cycle({"fuzz.cli": ["fuzz.ir"], "fuzz.ir": []}) is None
