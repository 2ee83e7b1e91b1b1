"""The strategy's message codec (fl_oracle/experiments/flower/codec.py): models as vectors and
back, their bytes, a node's error as one line, the partition order of replies. Parsing replies
is tested through the strategy (test_flower_guard.py, test_flower_stock.py, test_flower.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import Array, ArrayRecord  # noqa: E402

from fl_oracle.experiments.flower.codec import (  # noqa: E402
    Reply,
    flatten,
    nbytes,
    one_line,
    reply_order,
    unflatten_like,
)


def _like() -> ArrayRecord:
    return ArrayRecord(
        {"a": Array(np.zeros((2, 3), np.float32)), "b": Array(np.zeros(4, np.float64))}
    )


def test_a_model_is_one_vector_and_back():
    like = _like()
    flat = np.arange(10, dtype=np.float32)
    back = unflatten_like(flat, like)
    assert back["a"].numpy().shape == (2, 3) and back["b"].numpy().dtype == np.float64
    np.testing.assert_array_equal(flatten(back), flat)
    assert nbytes(back) == 6 * 4 + 4 * 8
    with pytest.raises(ValueError, match="11 values, the record 10"):
        unflatten_like(np.zeros(11, np.float32), like)


def test_a_nodes_error_is_one_line_and_replies_keep_partition_order():
    wrapped = (
        "<class 'flwr.X.ClientAppException'>:<'\nTraceback:\n  File x\nValueError: bad data\n'>"
    )
    assert one_line(wrapped) == "ValueError: bad data"
    assert one_line("") == "no reason given"
    assert one_line("x" * 400, limit=10) == "x" * 9 + "…"
    replies = [Reply(node=9), Reply(node=3, pid=2), Reply(node=1), Reply(node=5, pid=0)]
    assert [r.node for r in sorted(replies, key=reply_order)] == [5, 3, 1, 9]
