"""book/ is a house with floors: sub-packages by layer, imports only going down, no circles.

Read from the real imports of every module (top-level and inside functions, absolute and
relative), the same reader the never-stale rebuild follows (book.site.imports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from book.site import imports

PACKAGE = imports.PACKAGE
# Each layer may import the layers it names (and itself); book/__init__.py, the face a notebook
# uses, sits on top. The floors: kit; ideas, face; toy, real, site; studies, classroom;
# chapters; book.
MAY_IMPORT = {
    "kit": set(),
    "ideas": {"kit"},
    "face": {"kit"},
    "toy": {"ideas", "kit"},
    "real": {"ideas", "kit"},
    "site": {"kit"},
    "studies": {"toy", "real", "ideas", "kit"},
    "classroom": {"site", "ideas", "kit"},   # site: the catalogue machinery of the Chinese bundle
    "chapters": {"studies", "toy", "real", "ideas", "face", "kit"},
    "": {"face", "kit"},   # book/__init__.py
}
MAX_FLOORS = 6


def _graph() -> dict[str, set[str]]:
    """module -> the book modules it imports. ``book`` itself is left out: importing any
    module runs book/__init__.py first, which is Python's doing, not the module's."""
    graph = {}
    for name in sorted(imports.all_modules(PACKAGE)):
        source = imports.module_file(name, PACKAGE).read_text(encoding="utf-8")
        found = imports.module_imports(source, name, PACKAGE)
        assert found is not None, f"{name} does not parse"
        graph[name] = {m for m in found if m != "book" and m != name
                       and not name.startswith(m + ".")}
    return graph


GRAPH = _graph()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_is_in_a_layer():
    layers = {layer(m) for m in GRAPH}
    assert layers <= set(MAY_IMPORT), f"modules outside the layers: {layers - set(MAY_IMPORT)}"
    flat = [m for m in GRAPH if m.count(".") == 1 and layer(m) not in MAY_IMPORT]
    assert not flat, f"modules directly under book/ (put them in a layer): {flat}"


def test_imports_only_go_down():
    wrong = []
    for module, deps in GRAPH.items():
        for dep in deps:
            if layer(dep) != layer(module) and layer(dep) not in MAY_IMPORT[layer(module)]:
                wrong.append(f"{module} imports {dep}")
    assert not wrong, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(wrong))


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_circles_between_modules():
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


# The build's tools that import by name, and why the graph loses nothing by it: no module that
# a notebook can reach imports them (checked below), so no notebook's inputs hide behind them.
BY_NAME = {
    "book.chapters": "reads its explicit CHAPTERS list",
    "book.site.bytecode": "imports every module once, to byte-compile it after the install",
    "book.site.kernel_fork": "preloads third-party packages and the book package as a whole "
                             "into the process its kernels are forked from",
    "book.site.teachers_guide": "draws the teacher's guide from the chapter list, the module "
                                "the build loaded as the Sphinx extension book.chapters "
                                "(app.extensions): the guide is a markdown page, no notebook",
}


def test_no_module_is_found_by_name_or_glob():
    """pkgutil / importlib with a computed name (or a loaded Sphinx extension's module) would be
    a circle the graph cannot see; the only uses allowed are those of BY_NAME."""
    found = []
    for name in GRAPH:
        source = imports.module_file(name, PACKAGE).read_text(encoding="utf-8")
        if ("pkgutil" in source or "iter_modules" in source) and name not in BY_NAME:
            found.append(f"{name}: pkgutil")
        if "import_module(" in source and name not in BY_NAME:
            found.append(f"{name}: importlib.import_module")
        if ".extensions[" in source and name not in BY_NAME:
            found.append(f"{name}: a module the build loaded as a Sphinx extension")
    assert not found, found
    tools = set(BY_NAME) - {"book.chapters"}
    importers = {m for m, targets in GRAPH.items() if targets & tools}
    assert all(layer(m) == "site" for m in importers), importers


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Floor of each layer: one above the highest layer it imports (kit is floor 1)."""
    deps: dict[str, set[str]] = {}
    for module, targets in graph.items():
        deps.setdefault(layer(module), set()).update(
            layer(t) for t in targets if layer(t) != layer(module))
    level: dict[str, int] = {}

    def floor(name):
        if name not in level:
            level[name] = 1 + max((floor(d) for d in deps.get(name, ())), default=0)
        return level[name]

    for name in deps:
        floor(name)
    return level


def test_at_most_six_floors():
    level = floors(GRAPH)
    assert max(level.values()) <= MAX_FLOORS, level
    # a module stands above everything it imports
    assert all(level[layer(d)] < level[layer(m)] for m, ds in GRAPH.items() for d in ds
               if layer(d) != layer(m))


@pytest.mark.parametrize("bad, message", [
    ({"book.kit.a": {"book.ideas.b"}, "book.ideas.b": set()}, "book.kit.a imports"),
    ({"book.ideas.a": {"book.ideas.b"}, "book.ideas.b": {"book.ideas.a"}}, "circle"),
])
def test_the_checks_catch_what_they_look_for(bad, message):
    if message == "circle":
        assert _cycle(bad) is not None
    else:
        wrong = [f"{m} imports {d}" for m, ds in bad.items() for d in ds
                 if layer(d) != layer(m) and layer(d) not in MAY_IMPORT[layer(m)]]
        assert wrong and wrong[0].startswith(message)


def test_the_package_has_no_module_left_at_the_old_flat_place():
    left = sorted(p.name for p in Path(PACKAGE).glob("*.py") if p.name != "__init__.py")
    assert not left, f"modules directly under book/: {left}"
