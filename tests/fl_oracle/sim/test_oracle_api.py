"""The Oracle API on tiny injected data: contract, determinism, evaluate/step semantics."""

import numpy as np
import pandas as pd
import pytest
import torch

from fl_oracle.errors import CheckpointError, OracleError, UnknownClientError
from fl_oracle.sim.local import SampleStream
from fl_oracle.sim.model import forward, unflatten
from fl_oracle.sim.oracle import Oracle
from selection.schema import validate_stats

from helpers.oracle import tiny_config, tiny_data

DATA = tiny_data()


@pytest.fixture(scope="module")
def measured():
    o = Oracle(tiny_config(), data=DATA)
    return o, o.round_stats()


def test_round_stats_contract(measured):
    o, s = measured
    validate_stats(s)
    assert list(s["client_id"]) == list(o.clients["client_id"])
    assert set(s.columns) >= {
        "U_mnist",
        "U_usps",
        "U_svhn",
        "U_syn",
        "loss",
        "steps",
        "gamma_achieved",
    }
    assert (s["round"] == 0).all() and (s["F"] > 0).all()
    assert s.loc[s.domain == "mnist", "n_samples"].eq(20).all()
    # steps = ceil(n / batch): mnist 20/8 -> 3, usps 8/8 -> 1
    assert s.set_index("client_id").loc[["mnist-0", "usps-0"], "steps"].tolist() == [3, 1]
    # U is the pooled accuracy: equal validation sets -> mean of the domain accuracies
    np.testing.assert_allclose(s["U"], s[["U_mnist", "U_usps", "U_svhn", "U_syn"]].mean(axis=1))
    assert o.sources == {d: "generated stand-in" for d in o.domains}


def test_evaluate_single_client_val_equals_U_and_does_not_commit(measured):
    o, s = measured
    before = o.params
    for cid in ("svhn-1", "usps-0"):
        r = o.evaluate([cid], split="val")
        row = s.set_index("client_id").loc[cid]
        assert r["acc_pooled"] == pytest.approx(row["U"])
        assert r["acc_svhn"] == pytest.approx(row["U_svhn"])
    assert torch.equal(before, o.params) and o.round == 0
    r = o.evaluate(["mnist-0", "syn-1"])
    assert r["acc_worst"] == min(r[f"acc_{d}"] for d in o.domains)
    assert r["acc_avg"] == pytest.approx(np.mean([r[f"acc_{d}"] for d in o.domains]))


def test_custom_weights_match_default_when_proportional(measured):
    o, _ = measured
    sel = ["mnist-0", "usps-1", "svhn-0"]
    a = o.evaluate(sel, split="val")
    b = o.evaluate(sel, split="val", weights={"mnist-0": 20, "usps-1": 8, "svhn-0": 24})
    assert a == b
    with pytest.raises(OracleError, match="not in the selection"):
        o.evaluate(sel, weights={"syn-0": 1.0})
    with pytest.raises(UnknownClientError, match="nope-1"):
        o.evaluate(["nope-1"])
    with pytest.raises(OracleError, match="twice"):
        o.evaluate(["mnist-0", "mnist-0"])


def test_seed_determinism(measured):
    _, s = measured
    again = Oracle(tiny_config(), data=DATA).round_stats()
    pd.testing.assert_frame_equal(s, again)
    other = Oracle(tiny_config(seed=1), data=DATA).round_stats()
    assert not np.allclose(s["F"], other["F"])


def test_step_is_fedavg_of_plain_sgd_and_advances():
    cfg = tiny_config(lr=0.2)
    o = Oracle(cfg, data=DATA)
    w0 = o.params
    sel = ["mnist-1", "svhn-0", "syn-1"]
    fed = o._fed
    deltas, ns = [], []
    for cid in sel:  # reference FedAvg: torch.optim.SGD on each client, same batch streams
        i = o._index[cid]
        p = torch.nn.Parameter(w0.clone())
        opt = torch.optim.SGD([p], lr=0.2)
        stream = SampleStream(int(fed.n_samples[i]), o._stream_seed(i), torch.device("cpu"))
        b, n = 8, int(fed.n_samples[i])
        for _ in range(-(-n // b)):
            idx = stream.take(b)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(
                forward(o.arch, unflatten(o.arch, p), fed.xs[i][idx]), fed.ys[i][idx]
            ).backward()
            opt.step()
        deltas.append(p.detach() - w0)
        ns.append(n)
    expect = w0 + sum(n * d for n, d in zip(ns, deltas, strict=True)) / sum(ns)
    out = o.step(sel)
    torch.testing.assert_close(o.params, expect, atol=1e-5, rtol=1e-4)
    assert o.round == 1 and out["round"] == 1 and out["mu"] == 0.0
    assert out["acc_avg"] == pytest.approx(o.test_accuracy()["acc_avg"])
    assert out["B_dissimilarity"] >= 1.0 - 1e-9  # B(w) >= 1 by Jensen
    assert (o.round_stats(["usps-0"])["round"] == 1).all()


def test_state_dict_resumes_exactly():
    a = Oracle(tiny_config(), data=DATA)
    a.step(["mnist-0", "svhn-1"])
    b = Oracle(tiny_config(), data=DATA)
    b.load_state_dict(a.state_dict())
    pd.testing.assert_frame_equal(a.round_stats(), b.round_stats())
    with pytest.raises(CheckpointError, match="different configuration"):
        Oracle(tiny_config(seed=5), data=DATA).load_state_dict(a.state_dict())


def test_adaptive_mu_moves_by_tenths():
    o = Oracle(tiny_config(adaptive_mu=True, lr=0.2), data=DATA)
    mus = [o.step(["mnist-0", "svhn-0"])["mu"] for _ in range(2)]
    assert all(abs(m * 10 - round(m * 10)) < 1e-9 for m in mus)


def test_partition_is_disjoint_and_dirichlet_skews():
    o = Oracle(tiny_config(dirichlet_alpha=0.1), data=DATA)
    hist = o._fed.hist
    iid = Oracle(tiny_config(), data=DATA)
    assert o._B.mean() > iid._B.mean()
    assert hist.sum(1).tolist() == o.clients["n_samples"].tolist()
    # the mnist clients' rows of the training split are disjoint
    x0, x1 = o._fed.xs[0], o._fed.xs[1]
    assert not any(torch.equal(a, b) for a in x0 for b in x1)


def test_epoch_budgets_make_stragglers():
    o = Oracle(tiny_config(epoch_budgets={"svhn": 0.5, "mnist-1": 2.0}), data=DATA)
    steps = o.round_stats().set_index("client_id")["steps"]
    # svhn: ceil(0.5 * 24 / 8) = 2; mnist-1: ceil(2 * 20 / 8) = 5; mnist-0 keeps ceil(20 / 8) = 3
    assert (steps["svhn-0"], steps["svhn-1"], steps["mnist-1"], steps["mnist-0"]) == (2, 2, 5, 3)


def test_fisher_methods_agree(measured):
    _, s = measured
    v = Oracle(tiny_config(fisher_method="vmap"), data=DATA).round_stats()
    np.testing.assert_allclose(v["F"], s["F"], rtol=1e-5)
    np.testing.assert_allclose(v["loss"], s["loss"], rtol=1e-6)
