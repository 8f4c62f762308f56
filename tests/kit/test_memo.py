"""book.kit.memo: results computed once per build and loaded by the other edition's kernel."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from book.kit import memo


@pytest.fixture
def build_env(tmp_path, monkeypatch):
    """As in a kernel of the book build: a memo folder and a salt."""
    monkeypatch.setenv(memo.FOLDER_ENV, str(tmp_path / "memo"))
    monkeypatch.setenv(memo.SALT_ENV, "salt-one")
    return tmp_path / "memo"


def counted(**options):
    calls = []

    @memo.shared(**options)
    def noisy(n, scale=1.0):
        calls.append(n)
        return {"sum": float(torch.rand(n).sum()) * scale, "n": n}

    return noisy, calls


def test_outside_a_build_it_is_a_plain_call(monkeypatch):
    monkeypatch.delenv(memo.FOLDER_ENV, raising=False)
    monkeypatch.delenv(memo.SALT_ENV, raising=False)
    noisy, calls = counted()
    torch.manual_seed(0)
    noisy(3)
    torch.manual_seed(0)
    noisy(3)
    assert calls == [3, 3]


def test_the_second_call_loads_and_leaves_the_random_state_as_computing_did(build_env):
    noisy, calls = counted()
    torch.manual_seed(0)
    first = noisy(4)
    after_first = torch.rand(3)
    torch.manual_seed(0)
    second = noisy(4)   # loaded: the same result, and torch's generator moved on as if run
    after_second = torch.rand(3)
    assert calls == [4]
    assert second == first
    assert torch.equal(after_first, after_second)
    assert len(list(build_env.glob("salt-one-noisy-*.pkl"))) == 1


def test_other_arguments_random_state_or_salt_compute_again(build_env, monkeypatch):
    noisy, calls = counted()
    torch.manual_seed(0)
    noisy(4)
    torch.manual_seed(0)
    noisy(4, scale=2.0)          # another argument
    torch.manual_seed(1)
    noisy(4)                     # another random state: another result
    monkeypatch.setenv(memo.SALT_ENV, "salt-two")   # the book's code changed
    torch.manual_seed(0)
    noisy(4)
    assert calls == [4, 4, 4, 4]


def test_rng_false_shares_across_random_states(build_env):
    @memo.shared(rng=False)
    def seeded(n):
        calls.append(n)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(5)
            return torch.rand(n)

    calls = []
    torch.manual_seed(0)
    a = seeded(2)
    torch.manual_seed(1)
    b = seeded(2)
    assert calls == [2]
    assert torch.equal(a, b)


def test_mutated_module_gets_the_trained_weights_and_flags(build_env):
    @memo.shared(rng=False, mutates="model")
    def train(model, value):
        calls.append(value)
        with torch.no_grad():
            model.weight.fill_(value)
        model.eval()
        return "done"

    calls = []
    a = nn.Linear(2, 2)
    b = nn.Linear(2, 2)
    b.load_state_dict(a.state_dict())       # the same model, another object
    assert train(a, 3.0) == "done"
    assert train(b, 3.0) == "done"
    assert calls == [3.0]
    assert torch.equal(b.weight, torch.full((2, 2), 3.0))
    assert not b.training


def test_modules_are_keyed_by_value_not_identity():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    b = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    b.load_state_dict(a.state_dict())
    assert memo.fingerprint(a) == memo.fingerprint(b)
    with torch.no_grad():
        b[0].bias[0] += 1e-6
    assert memo.fingerprint(a) != memo.fingerprint(b)
    b.load_state_dict(a.state_dict())
    b.eval()                                 # another flag: another module
    assert memo.fingerprint(a) != memo.fingerprint(b)


def test_a_models_fingerprint_is_the_same_in_another_process():
    # pickle.dumps of a module differs from process to process; the fingerprint must not
    code = ("from book.kit import memo; from book.toy.model import TinyEncoder; "
            "from book.toy import train; print(memo.fingerprint(TinyEncoder(**train.MODEL)))")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert len(runs) == 1 and len(runs.pop().strip()) == 64


def test_what_it_cannot_key_is_computed_every_time(build_env):
    @memo.shared
    def apply(fn, x):
        calls.append(x)
        return fn(x)

    calls = []
    assert apply(lambda v: v + 1, 1) == 2
    assert apply(lambda v: v + 1, 1) == 2
    assert calls == [1, 1]
    hooked = nn.Linear(2, 2)
    hooked.register_forward_hook(lambda *args: None)
    with pytest.raises(memo._Unkeyable):
        memo.fingerprint(hooked)


def test_a_file_cut_short_is_computed_again(build_env):
    noisy, calls = counted()
    torch.manual_seed(0)
    first = noisy(2)
    (path,) = build_env.glob("*.pkl")
    path.write_bytes(path.read_bytes()[:10])
    torch.manual_seed(0)
    assert noisy(2) == first
    assert calls == [2, 2]


def test_mutates_must_name_an_argument():
    with pytest.raises(ValueError, match="no argument 'model'"):
        memo.shared(mutates="model")(lambda x: x)


def test_the_books_heavy_functions_are_shared():
    from book.ideas import longctx
    from book.toy import fit, train

    for fn in (train.default_data, fit.fit, longctx.cost_sweep):
        assert getattr(fn, "book_shared", False), fn.__qualname__
