"""The trained takeout-order encoder in the HTML book (Sphinx extension, ``_config.yml``).

At the end of an HTML build, :func:`export` writes the chapter-8 checkpoint
(:func:`book.toy.train.pretrained`) to ``_static/book-orders-model.js`` (weights and
vocabulary, :func:`book.face.typed.model_script`) and copies the engine,
``book/face/encoder.js``, to ``_static/book-encoder.js``; pages that hold a typed-order control
(:func:`book.face.typed.control_html`, ``class="book-typed"``) load both. The chapter modules
draw the control (chapter 8: :func:`book.chapters.ch08_seeing_attention.typed_order`).
"""

from __future__ import annotations

from pathlib import Path

from book.face import typed
from book.toy import orders, train
from book.toy.model import check_encoder

MODEL = "orders_tiny"              # window.bookModels["orders_tiny"]
MODEL_JS = "book-orders-model.js"  # in _static
ENGINE_JS = "book-encoder.js"      # in _static


def orders_payload(model=None) -> dict:
    """The encoder ``model`` (default: the shipped checkpoint) with the order language's
    vocabulary, as :func:`book.face.typed.payload` writes it for the page."""
    model = train.pretrained() if model is None else check_encoder(model)
    return typed.payload(model.config.as_dict(), model.state_dict(), orders.VOCAB.itos,
                         orders.WORDS, orders.LABELS, len(orders.INGREDIENT_LABELS),
                         orders.NONE)


def export(static_dir, model=None) -> dict[str, int]:
    """Write the model script and the engine into ``static_dir``; their sizes in bytes."""
    static = Path(static_dir)
    static.mkdir(parents=True, exist_ok=True)
    files = {MODEL_JS: typed.model_script(MODEL, orders_payload(model)),
             ENGINE_JS: typed.script()}
    sizes = {}
    for name, text in files.items():
        path = static / name
        data = text.encode("utf-8")
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        sizes[name] = len(data)
    return sizes


def _page_has_control(context: dict) -> bool:
    return 'class="book-typed"' in (context.get("body") or "")


def _add_scripts(app, pagename, templatename, context, doctree):
    if app.builder.format == "html" and _page_has_control(context):
        app.builder.add_js_file(MODEL_JS)
        app.builder.add_js_file(ENGINE_JS)


def _export(app, exception):
    if exception is None and app.builder.format == "html":
        export(Path(app.outdir) / "_static")


def setup(app):
    app.connect("html-page-context", _add_scripts)
    app.connect("build-finished", _export)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
