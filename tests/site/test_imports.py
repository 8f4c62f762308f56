"""The import graph of book/ (book/site/imports.py), read from the sources: what the never-stale
rebuild follows from each notebook and what tests/test_layers.py holds to the floors."""

from __future__ import annotations

import json

from book.site import imports


def test_import_graph_reads_relative_absolute_and_lazy_imports():
    source = ("import book\nfrom book import glued, ideas\nimport book.ideas.masks as m\n"
              "from book.ideas.mha import X\ndef f():\n    from ..kit import timing\n"
              "    from .orders import Order\n    from book.toy import nothing_here\n")
    found = imports.module_imports(source, "book.toy.probe")
    assert found == {"book", "book.ideas", "book.ideas.masks", "book.ideas.mha", "book.kit",
                     "book.kit.timing", "book.toy", "book.toy.orders"}
    assert imports.module_imports("def (:", "") is None
    assert imports.module_file("book.setup") is None   # a name of book/__init__.py
    assert imports.module_file("book.ideas").name == "__init__.py"
    # the closure follows each module's own imports: mha needs masks and kit's validate
    used = imports.closure({"book.ideas.mha"})
    assert {"book", "book.ideas.mha", "book.ideas.masks", "book.kit.validate",
            "book.face.display"} <= used
    assert "book.toy.train" not in used and "book.chapters" not in used
    assert imports.closure(None) == imports.all_modules(imports.PACKAGE)
    assert "book.classroom.sandbox" in imports.all_modules(imports.PACKAGE)


def test_a_notebook_reaches_what_its_code_cells_import(tmp_path):
    notebook = tmp_path / "01_x.ipynb"
    cells = [{"cell_type": "markdown", "source": "import book.toy.train"},
             {"cell_type": "code", "source": ["%matplotlib inline\n", "!pip list\n",
                                              "from book.ideas import masks\n"]}]
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert imports.notebook_source(notebook) == "from book.ideas import masks"
    used = imports.notebook_closure(notebook)
    assert {"book", "book.ideas", "book.ideas.masks"} <= used
    assert "book.toy.train" not in used   # the markdown cell is prose
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "def (:"}]}),
                        encoding="utf-8")
    assert imports.notebook_closure(notebook) == imports.all_modules()
