"""book.face.controls: one list of controls, from which the live face makes its widgets and
the in-page face its HTML inputs (neither face is built from the other)."""

from __future__ import annotations

import ipywidgets as widgets
import pytest
from faces import forbid

from book.face import controls, inpage, live

CONTROLS = [controls.Slider(name="d_k", label="d_k", low=1, high=512, value=64, page_high=4096),
            controls.Slider(name="n", label="samples", low=100, high=3000, value=2000, step=100),
            controls.Slider(name="layer", label="layer", low=0, high=1, value=1, page_menu=True),
            controls.Choice(name="heads", label="heads", options=[(1, "1 head"), (4, "4 heads")],
                            value=4, slider=True),
            controls.Choice(name="kind", label="mask", options=[("none", "no mask"),
                                                                ("causal", "causal")],
                            value="causal"),
            controls.TextBox(name="order", label="order", value="一碗牛肉面", width="420px")]


def test_the_live_widgets_and_the_page_inputs_come_from_one_list():
    made = live.widgets_for(CONTROLS)
    assert list(made) == [c.name for c in CONTROLS]
    assert isinstance(made["d_k"], widgets.IntSlider)
    assert (made["d_k"].min, made["d_k"].max, made["d_k"].value) == (1, 512, 64)
    assert (made["n"].step, made["n"].value) == (100, 2000)
    assert isinstance(made["heads"], widgets.SelectionSlider) and made["heads"].value == 4
    assert isinstance(made["kind"], widgets.Dropdown) and made["kind"].value == "causal"
    assert made["kind"].options == (("no mask", "none"), ("causal", "causal"))
    assert isinstance(made["order"], widgets.Text) and made["order"].layout.width == "420px"
    assert made["order"].continuous_update is False
    page = {c["name"]: c for c in inpage.page_controls(CONTROLS)}
    assert (page["d_k"]["kind"], page["d_k"]["high"], page["d_k"]["value"]) == ("range", 4096, 64)
    assert page["n"]["step"] == 100
    assert page["layer"]["kind"] == "select"            # the page's menu of a layer
    assert page["layer"]["options"] == [("0", "0"), ("1", "1")] and page["layer"]["value"] == "1"
    assert page["heads"]["options"] == [("1", "1 head"), ("4", "4 heads")]
    assert page["kind"]["value"] == "causal" and page["order"]["kind"] == "text"
    assert controls.first_values(CONTROLS) == {"d_k": 64, "n": 2000, "layer": 1, "heads": 4,
                                               "kind": "causal", "order": "一碗牛肉面"}


def test_bad_controls_say_what_to_write():
    with pytest.raises(ValueError, match="identifier"):
        controls.Slider(name="d k", label="d_k", low=1, high=2, value=1)
    with pytest.raises(TypeError, match="string table"):
        controls.Slider(name="d_k", label=" ", low=1, high=2, value=1)
    with pytest.raises(ValueError):
        controls.Slider(name="d_k", label="d_k", low=1, high=8, value=9)
    with pytest.raises(ValueError):
        controls.Slider(name="d_k", label="d_k", low=1, high=8, value=2, page_high=4)
    with pytest.raises(TypeError, match="pairs"):
        controls.Choice(name="k", label="k", options=["a", "b"], value="a")
    with pytest.raises(ValueError):
        controls.Choice(name="k", label="k", options=[("a", "A")], value="b")
    with pytest.raises(TypeError, match="str"):
        controls.TextBox(name="t", label="t", value=3)
    with pytest.raises(ValueError, match="repeat"):
        live.widgets_for([CONTROLS[0], CONTROLS[0]])
    with pytest.raises(TypeError, match="Slider, Choice"):
        inpage.page_controls([{"kind": "range"}])
    with pytest.raises(TypeError, match="positional"):   # keyword-only fields
        controls.Slider("d_k", "d_k", 1, 2, 1)


def _head_models():
    from book.studies import heads
    from book.toy import orders

    data = orders.train_test_split(orders.generate(120, seed=7), 0.2, seed=7)
    return ({h: heads.train_heads(h, steps=2, data=data, d_model=16).model for h in (1, 4)},)


@pytest.mark.parametrize("chapter, faces, args", [
    ("ch02_scaling", ("dk", "softmax_row"), tuple), ("ch04_pytorch", ("mask",), tuple),
    ("ch06_heads", ("head_maps",), _head_models), ("ch08_seeing_attention", ("head_view",), tuple),
    ("ch09_long_context", ("window",), tuple)])
def test_no_interactive_face_is_built_from_another(chapter, faces, args, monkeypatch):
    """Each face builds its figure from the chapter's ``_X_plot`` and its controls from one
    list: with the other faces' public functions broken, each one still builds."""
    import importlib

    import book

    book.setup()
    module = importlib.import_module(f"book.chapters.{chapter}")
    made = args()
    for stem in faces:
        for face, others in (("live", ("figure", "inpage")), ("inpage", ("figure", "live"))):
            with monkeypatch.context() as patch:
                forbid(patch, module, *(f"{stem}_{other}" for other in others))
                getattr(module, f"{stem}_{face}")(*made)
