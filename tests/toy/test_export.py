"""book.toy.export: the trained encoder and the order language as the page's forward pass reads
them (the forward pass itself is checked against torch in tests/test_browser_order.py)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from book.toy import export, orders, train
from book.toy.model import TinyEncoder


def test_page_model_holds_every_tensor_exactly():
    model = train.pretrained()
    out = export.page_model(model)
    assert json.loads(json.dumps(out)) == out   # plain JSON
    state = model.state_dict()
    assert set(out["tensors"]) == set(state)
    for name, t in state.items():
        entry = out["tensors"][name]
        got = np.frombuffer(base64.b64decode(entry["data"]), dtype="<f4").reshape(entry["shape"])
        np.testing.assert_array_equal(got, t.numpy())   # float32 bytes: no rounding at all
    c = model.config
    assert (out["d_model"], out["n_heads"], out["n_layers"], out["norm"], out["max_len"]) == (
        c.d_model, c.n_heads, c.n_layers, c.norm, c.max_len)
    assert out["eps"] == 1e-5 and out["format"] == export.FORMAT


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_page_model_reads_back_as_the_same_model(norm):
    import torch

    from book.toy import probe

    model = TinyEncoder(d_model=16, n_heads=4, n_layers=2, norm=norm, seed=3)
    back = export.model_from_page(json.loads(json.dumps(export.page_model(model))))
    assert back.config == model.config
    for name, t in model.state_dict().items():
        assert torch.equal(back.state_dict()[name], t), name
    order = orders.Order.from_text("两碗炒饭，不要葱。")
    np.testing.assert_array_equal(probe.attention_maps(back, order),
                                  probe.attention_maps(model, order))
    with pytest.raises(ValueError, match="what page_model writes"):
        export.model_from_page({"format": 99})
    # maps only: what reaches no attention map stays out, and the maps are the same
    maps_only = export.page_model(model, maps_only=True)
    left_out = set(model.state_dict()) - set(maps_only["tensors"])
    assert {"head.weight", "blocks.1.attn.w_v.weight", "blocks.1.ff.0.weight"} <= left_out
    assert "blocks.1.attn.w_q.weight" in maps_only["tensors"]
    assert ("blocks.1.norm1.weight" in left_out) == (norm == "post")
    assert not any(name.startswith("blocks.0.") for name in left_out)
    partial = export.model_from_page(json.loads(json.dumps(maps_only)))
    np.testing.assert_array_equal(probe.attention_maps(partial, order),
                                  probe.attention_maps(model, order))
    with pytest.raises(TypeError, match="maps_only"):
        export.page_model(model, maps_only="yes")


def test_page_model_refuses_what_the_page_cannot_compute():
    with pytest.raises(ValueError, match="full attention only"):
        export.page_model(TinyEncoder(d_model=8, n_heads=2, n_layers=1, attention="window-2"))
    with pytest.raises(TypeError, match="TinyEncoder"):
        export.page_model(object())


def test_page_language_is_the_tokenizers_and_the_rules():
    lang = export.page_language()
    assert lang["ids"]["香菜"] == orders.VOCAB.stoi["香菜"]
    assert lang["words"]["多加"] == ["add extra", "modifier", "extra"]
    assert lang["longest"] == max(len(w) for w in orders.WORDS)
    assert lang["labels"][:lang["n_ingredient"]] == list(orders.INGREDIENT_LABELS)
    assert lang["ascii"][","] == "，" and lang["clause_end"] == ["，", "。"]
