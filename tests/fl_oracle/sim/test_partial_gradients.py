"""DivFL's partial gradients in the oracle (``update_vectors("partial")``, what ``divfl:stale``
reads; the official ``melodi-lab/divfl`` ``flearn/trainers/fedavg.py``): every client's probe
gradient at round 0, then each committed client's at the model it received, the others' kept
as they were; a state dict carries them."""

from __future__ import annotations

import numpy as np
import pytest

from fl_oracle.sim.oracle import Oracle

from helpers.oracle import tiny_config, tiny_data


@pytest.fixture(scope="module")
def data():
    return tiny_data()


def test_each_client_keeps_its_gradient_at_the_model_it_received(data):
    oracle = Oracle(tiny_config(), data=data)
    ids = list(oracle.clients["client_id"])
    w0 = oracle.update_vectors("probe")  # minus every client's probe gradient at w_0
    np.testing.assert_array_equal(oracle.update_vectors("partial"), w0)  # round 0: everyone's
    first, second = ["mnist-0", "svhn-1"], ["svhn-1", "syn-0"]
    oracle.round_stats(first)  # the picks train at w_0
    oracle.step(first)
    np.testing.assert_array_equal(oracle.update_vectors("partial"), w0)  # trained from w_0
    w1 = oracle.update_vectors("probe")  # at w_1
    assert not np.allclose(w1, w0)
    oracle.round_stats(second)
    oracle.step(second)
    got = oracle.update_vectors("partial")
    for i, c in enumerate(ids):
        want = w1[i] if c in second else w0[i]  # svhn-1's refreshed, mnist-0's as at w_0
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-7, err_msg=c)
    assert got.dtype == np.float32 and np.isfinite(got).all()


def test_the_picks_gradient_without_a_probe_pass_equals_the_probe_passs(data):
    """A round that ran no probe pass computes the picks' gradients from their batches alone:
    the same as the full pass gives them."""
    a, b = Oracle(tiny_config(), data=data), Oracle(tiny_config(), data=data)
    for o in (a, b):
        o.update_vectors("partial")
        o.step(["usps-0", "syn-1"])
    full = a.update_vectors("probe")  # a: the probe pass at w_1 ran before the step
    a.step(["usps-1", "mnist-1"])
    b.step(["usps-1", "mnist-1"])  # b: no probe pass at w_1
    np.testing.assert_allclose(b.update_vectors("partial"), a.update_vectors("partial"),
                               rtol=1e-5, atol=1e-7)  # fmt: skip
    rows = [list(a.clients["client_id"]).index(c) for c in ("usps-1", "mnist-1")]
    np.testing.assert_allclose(a.update_vectors("partial")[rows], full[rows], rtol=1e-6)


def test_nothing_is_kept_until_read_and_a_state_dict_carries_them(data):
    oracle = Oracle(tiny_config(), data=data)
    oracle.step(["mnist-0", "usps-0"])
    assert oracle.state_dict()["partial"] == {}  # never read: nothing kept
    oracle.update_vectors("partial")
    oracle.step(["mnist-1", "svhn-0"])
    state = oracle.state_dict()
    again = Oracle(tiny_config(), data=data)
    again.load_state_dict(state)
    np.testing.assert_array_equal(again.update_vectors("partial"), oracle.update_vectors("partial"))
    again.step(["syn-0", "syn-1"])
    oracle.step(["syn-0", "syn-1"])
    np.testing.assert_array_equal(again.update_vectors("partial"), oracle.update_vectors("partial"))
