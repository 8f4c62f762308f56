"""The build's own template folder: copies of the theme's templates that the book changes
(the search field's name, the Chinese edition's words), first on Sphinx's template path."""

from __future__ import annotations

from pathlib import Path


def override(app, config, name: str, text: str) -> None:
    """Write ``text`` as template ``name`` in the build's own template folder, first on the path."""
    target = Path(app.doctreedir).parent / "book_templates"
    out = target / name
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")
    if str(target) not in config.templates_path:
        config.templates_path = [str(target), *config.templates_path]
