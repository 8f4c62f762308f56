"""book.face.plotting: the attention heatmap's axes, labels and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from book.face import plotting
from book.toy import orders_example


def test_heatmap_axes_and_labels():
    labels = orders_example.labels()
    fig = plotting.attention_heatmap(np.eye(len(labels)), labels, title="t")
    assert list(fig.data[0].x) == labels and list(fig.data[0].y) == labels
    assert fig.layout.yaxis.autorange == "reversed"


@pytest.mark.parametrize("weights,labels,msg", [
    (np.eye(2), ["a", "a"], "unique"),
    (np.eye(2), ["a", "b", "c"], "one label per row"),
])
def test_heatmap_bad_input(weights, labels, msg):
    with pytest.raises(ValueError, match=msg):
        plotting.attention_heatmap(weights, labels)
