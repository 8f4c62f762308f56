"""book.face.typed and book/face/encoder.js: the trained encoder run outside Python.

The engine runs under node (the same file the HTML book loads) on the shipped checkpoint and
must give torch's attention maps (every layer and head) and labels: held-out orders and edge
cases (ASCII punctuation, spaces, repeated words, an order the rules call ambiguous, the
longest order the model takes), and the same refusals as the Jupyter live view (empty text, an
unknown word, too many words). tests/test_browser_typed.py does the same in Chromium.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from book.chapters import typed_orders
from book.face import typed
from book.studies import attention_roles as roles
from book.toy import orders, probe, train
from book.toy.model import TinyEncoder

NODE = shutil.which("node")
RUNNER = """
globalThis.window = globalThis;
require(process.argv[2] + '/book-orders-model.js');
require(process.argv[2] + '/book-encoder.js');
const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(texts.map(t => {
  try { return window.bookEncoder.run('orders_tiny', t); } catch (e) { return {error: e}; }
})));
"""
# edge cases beside the held-out orders: ASCII punctuation and spaces, a repeated word, an order
# the rules call ambiguous (two modifiers in one clause), one word, the longest order allowed
EDGE = ["一碗牛肉面, 不要香菜. 多加辣", "香菜 香菜 香菜，不要。", "不要香菜多加辣。", "饺子",
        "一碗牛肉面，" * 21 + "饺子"]
LONG = "一碗牛肉面，" * 21 + "饺子。"   # one token over the model's 64


def run_in_node(texts, static_dir, model=None):
    typed_orders.export(static_dir, model)
    (static_dir / "run.js").write_text(RUNNER, encoding="utf-8")
    proc = subprocess.run([NODE, str(static_dir / "run.js"), str(static_dir)], check=True,
                          input=json.dumps(texts), capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)


def held_out(n: int) -> list[str]:
    _, test = train.default_data()
    return [o.text for o in test[:n]]


def test_edge_orders_are_what_they_claim():
    assert len(orders.tokenize(EDGE[-1])) == train.pretrained().config.max_len
    assert orders.tokenize(EDGE[0]) == orders.tokenize("一碗牛肉面，不要香菜。多加辣")
    with pytest.raises(ValueError):
        orders.label(orders.tokenize(EDGE[2]))   # ambiguous for the rules


@pytest.mark.skipif(NODE is None, reason="node is not installed (the browser test covers it)")
def test_engine_gives_torchs_maps_and_labels(tmp_path):
    model = train.pretrained()
    texts = held_out(15) + EDGE
    out = run_in_node(texts, tmp_path)
    worst = 0.0
    for text, got in zip(texts, out, strict=True):
        assert "error" not in got, (text, got)
        order = roles.read_order(text, model.config.max_len)
        assert got["tokens"] == list(order.tokens)
        want = probe.attention_maps(model, order)
        maps = np.array(got["maps"])
        assert maps.shape == want.shape
        worst = max(worst, float(np.abs(maps - want).max()))
        assert got["labels"] == probe.predict(model, order), text
        try:
            rules = orders.label(order.tokens)
        except ValueError:
            rules = None
        assert got["rules"] == rules
    assert worst <= 1e-5, worst


@pytest.mark.skipif(NODE is None, reason="node is not installed (the browser test covers it)")
def test_engine_runs_a_post_norm_model_without_positions(tmp_path):
    model = TinyEncoder(d_model=16, n_heads=4, n_layers=3, norm="post", positions=False,
                        seed=3).eval()
    texts = held_out(3)
    for text, got in zip(texts, run_in_node(texts, tmp_path, model), strict=True):
        want = probe.attention_maps(model, text)
        np.testing.assert_allclose(np.array(got["maps"]), want, atol=1e-5)
        assert got["labels"] == probe.predict(model, text)


@pytest.mark.skipif(NODE is None, reason="node is not installed (the browser test covers it)")
def test_engine_refuses_what_python_refuses(tmp_path):
    long_order = LONG
    texts = ["", "   ", "一碗牛肉面，不要洋芋", long_order]
    out = run_in_node(texts, tmp_path)
    assert [o["error"]["kind"] for o in out] == ["empty", "empty", "unknown", "long"]
    assert out[2]["error"]["word"] == "洋芋" and out[2]["error"]["at"] == 8
    with pytest.raises(ValueError, match="'洋芋' \\(at character 8"):
        orders.tokenize(texts[2])
    assert out[3]["error"]["n"] == len(orders.tokenize(long_order)) == 65
    with pytest.raises(ValueError):
        roles.read_order(long_order, 64)


def test_payload_is_float32_of_the_state_and_the_script_assigns_it():
    model = train.pretrained()
    data = typed_orders.orders_payload(model)
    state = model.state_dict()
    assert set(data["weights"]) == set(state)
    import base64
    w = data["weights"]["head.weight"]
    got = np.frombuffer(base64.b64decode(w["data"]), dtype="<f4").reshape(w["shape"])
    np.testing.assert_array_equal(got, state["head.weight"].numpy())
    assert data["itos"][0] == orders.PAD and data["labels"] == list(orders.LABELS)
    js = typed.model_script("orders_tiny", data)
    assert js.startswith("window.bookModels = window.bookModels || {};")
    assert json.loads(js.split(" = ", 2)[2].rstrip().rstrip(";"))["config"]["n_heads"] == 4


def test_bad_input_says_what_to_do():
    model = train.pretrained()
    good = typed_orders.orders_payload(model)
    with pytest.raises(ValueError, match="attention='scratch'"):
        typed.payload({**model.config.as_dict(), "attention": "linear"}, model.state_dict(),
                      orders.VOCAB.itos, orders.WORDS, orders.LABELS, 4)
    with pytest.raises(ValueError, match="lacks"):
        typed.payload({"d_model": 64}, model.state_dict(), orders.VOCAB.itos, orders.WORDS,
                      orders.LABELS, 4)
    with pytest.raises(TypeError):
        typed.payload(model.config.as_dict(), {}, orders.VOCAB.itos, orders.WORDS,
                      orders.LABELS, 4)
    with pytest.raises(ValueError, match="identifier"):
        typed.model_script("a-b", good)
    with pytest.raises(ValueError, match="lacks"):
        typed.control_html("orders_tiny", {"empty": "x"})
    with pytest.raises(ValueError, match="model must be"):
        typed.control_html("", {})


def test_export_writes_the_model_and_the_engine(tmp_path):
    sizes = typed_orders.export(tmp_path)
    assert set(sizes) == {typed_orders.MODEL_JS, typed_orders.ENGINE_JS}
    assert (tmp_path / typed_orders.ENGINE_JS).read_text(encoding="utf-8") == typed.script()
    assert 100_000 < sizes[typed_orders.MODEL_JS] < 600_000   # about 0.4 MB: 75 k float32
    stamp = (tmp_path / typed_orders.MODEL_JS).stat().st_mtime_ns
    typed_orders.export(tmp_path)   # unchanged: not rewritten
    assert (tmp_path / typed_orders.MODEL_JS).stat().st_mtime_ns == stamp
