"""The ``book`` package's import graph, read from the sources (nothing is imported).

Which ``book`` modules a module or a notebook imports (:func:`module_imports`: top-level and
inside functions, absolute and relative, with the packages importing them runs) and everything
reached from there (:func:`closure`). Two readers use it: the never-stale rebuild
(``book.site.sphinxext``: a notebook is executed again when a module it reaches changes) and the
layer rules (``tests/test_layers.py``: imports only go down the floors, no circles).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the book/ the build (and its kernels) import


def module_file(name: str, package: Path = PACKAGE) -> Path | None:
    """The file of the ``book`` module ``name`` (dotted, e.g. ``book.ideas.mha``), or ``None``
    when ``name`` is no module of the package (a name defined in a module, e.g. ``book.setup``)."""
    parts = name.split(".")
    if parts[0] != "book":
        return None
    base = package.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _parents(name: str) -> list[str]:
    """``book.ideas.mha`` -> ``["book", "book.ideas"]``: importing a module runs its packages."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def module_imports(source: str, module: str, package: Path = PACKAGE) -> set[str] | None:
    """The ``book`` modules (dotted names) that ``source`` imports, with the packages that
    importing them runs (``None`` if it does not parse).

    ``module`` is the importing module's own dotted name (``""`` for a notebook) so that
    relative imports (``from . import masks``, ``from ..kit import validate``) resolve. Imports
    inside functions count too: the book imports lazily. ``from X import a`` counts ``X.a``
    where that is a module, else ``X``.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    own = module_file(module, package)
    here = module.split(".") if own is not None and own.name == "__init__.py" \
        else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "book"]
            found.update(names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the package
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "book":
                target = node.module
            else:
                continue
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names
                         if module_file(f"{target}.{alias.name}", package) is not None)
    found = {name for name in found if module_file(name, package) is not None}
    return found | {parent for name in found for parent in _parents(name)}


def all_modules(package: Path = PACKAGE) -> set[str]:
    """Every module of the package: what a notebook depends on when an import cannot be read."""
    names = set()
    for path in package.rglob("*.py"):
        parts = ("book", *path.relative_to(package).with_suffix("").parts)
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def closure(start: set[str] | None, package: Path = PACKAGE,
            read: dict[str, set[str] | None] | None = None) -> set[str]:
    """Every ``book`` module reached from ``start`` by following the imports of each module's
    file (all of them where anything fails to parse, or where ``start`` is ``None``: an
    unreadable notebook). ``read`` keeps each module's imports once read, so that the notebooks
    of one build parse each module once."""
    if start is None:
        return all_modules(package)
    read = {} if read is None else read
    todo, seen = list(start | {"book"}), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name, package)
        if path is None:
            continue
        seen.add(name)
        if name not in read:
            read[name] = module_imports(path.read_text(encoding="utf-8"), name, package)
        deps = read[name]
        if deps is None:
            return all_modules(package)
        todo.extend(deps)
    return seen


def notebook_source(path: Path) -> str:
    """The notebook's code cells as one Python source (IPython magics and shell lines dropped)."""
    cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        lines += [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def notebook_closure(path: Path, package: Path = PACKAGE,
                     read: dict[str, set[str] | None] | None = None) -> set[str]:
    """Every ``book`` module the notebook at ``path`` reaches (:func:`closure` of its imports)."""
    return closure(module_imports(notebook_source(path), "", package), package, read)
