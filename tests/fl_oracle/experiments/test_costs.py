"""Deployment cost in the loop's history, checked against the clients' own sizes and epochs,
and the information models on the real (tiny) oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import spearmanr

from fl_oracle.experiments.loop import run_training
from fl_oracle.experiments.plan import plan_run
from fl_oracle.sim.local import plan_steps
from fl_oracle.sim.oracle import Oracle
from fl_oracle.sim.stats import loss_stacked
from selection.selectors import make_selector, parse_spec

from helpers.oracle import tiny_config, tiny_data

DATA = tiny_data()


def _oracle(**changes) -> Oracle:
    return Oracle(tiny_config(**changes), data=DATA)


def _run(spec: str, rounds: int = 3, k: int = 3, **changes):
    o = _oracle(**changes)
    parsed = parse_spec(spec)
    res = run_training(
        o,
        plan_run(
            make_selector(parsed, seed=0),
            rounds=rounds,
            k=k,
            name=spec,
            stats_mode=parsed.information,
        ),
    )
    return o, res.history


def _work(o: Oracle, ids) -> int:
    """Steps x batch from each client's own size and epoch budget (gamma = 0: no checks)."""
    cfg, n = o.config, o.clients.set_index("client_id")["n_samples"]
    return sum(
        np.prod(plan_steps(int(n[c]), cfg.batch_size, cfg.budget(c))) for c in ids
    )  # fmt: skip


def _picks(h: pd.DataFrame) -> list[list[str]]:
    return [s.split(";") for s in h["selected"]]


def test_baseline_is_charged_for_its_picks_training_only():
    o, h = _run("proportional")
    mb = o.model_bytes
    assert mb == sum(p.numel() for p in [o.params]) * 4
    assert list(h["stats_mode"]) == ["rule"] * 3 and not h["upper_bound"].any()
    assert list(h["cost_train_samples"]) == [_work(o, ids) for ids in _picks(h)]
    assert (h["cost_probe_samples"] == 0).all()
    assert (h["cost_bytes_down"] == 3 * mb).all()
    assert (h["cost_bytes_up"] == 3 * mb + 4 * 2 * 3).all()


def test_fresh_charges_every_clients_training_and_probe():
    o, h = _run("eps:50")
    ids = list(o.clients["client_id"])
    probes = sum(o.probe_sizes().values())
    assert h["upper_bound"].all() and list(h["stats_mode"]) == ["fresh"] * 3
    assert (h["cost_train_samples"] == _work(o, ids)).all()
    assert (h["cost_probe_samples"] == probes).all()
    assert (h["cost_bytes_down"] == len(ids) * o.model_bytes).all()
    floats = 2 + o.n_classes
    assert (h["cost_bytes_up"] == len(ids) * (o.model_bytes + 4 * 2 + 4 * floats)).all()


def test_probe_charges_the_picks_training_and_every_probe_batch():
    o, h = _run("eps:50@probe")
    n = len(o.clients)
    assert list(h["cost_train_samples"]) == [_work(o, ids) for ids in _picks(h)]
    assert (h["cost_probe_samples"] == sum(o.probe_sizes().values())).all()
    # w_t and the D validation gradients to every client, w_t again with each commit
    assert (h["cost_bytes_down"] == (n * (1 + len(o.domains)) + 3) * o.model_bytes).all()
    floats = 2 + o.n_classes + len(o.domains)
    assert (h["cost_bytes_up"] == 3 * o.model_bytes + 4 * (2 * 3 + floats * n)).all()
    assert not h["upper_bound"].any()


@pytest.mark.parametrize(("spec", "probed"), [("fisher-topk", 8), ("power-of-choice:5", 5)])
def test_rules_that_read_probes_pay_for_them(spec, probed):
    o, h = _run(spec)
    sizes = o.probe_sizes()
    assert (h["cost_probe_samples"] > 0).all()
    if spec == "fisher-topk":
        assert (h["cost_probe_samples"] == sum(sizes.values())).all()
    # the picks are among the probed clients: one model message to each probed client
    assert (h["cost_bytes_down"] == probed * o.model_bytes).all()
    assert list(h["cost_train_samples"]) == [_work(o, ids) for ids in _picks(h)]


def test_pool_commits_its_candidates_updates_without_training_again(monkeypatch):
    import fl_oracle.sim.oracle as oracle_mod

    trained: list[int] = []
    real = oracle_mod.train_clients

    def counting(arch, w, clients, **kw):
        trained.extend(clients)
        return real(arch, w, clients, **kw)

    monkeypatch.setattr(oracle_mod, "train_clients", counting)
    o, h = _run("eps:50@pool:5", rounds=2)
    assert len(trained) == 2 * 5  # five candidates per round, the three picks not again
    for ids in _picks(h):
        assert len(ids) == 3
    assert (h["cost_bytes_down"] == 5 * o.model_bytes).all()
    # the pool is what the history charges: five clients' training per round
    assert (h["cost_train_samples"] > 0).all()


def test_probe_first_order_utilities_match_the_realized_loss_decrease():
    """One full-batch local step with a small lr: x_{i,d} = lr·<grad L_i, grad L_d> is the
    first-order decrease of L_d that client i's update realizes."""
    o = _oracle(lr=1e-3, local_epochs=1.0, batch_size=64, fisher_samples=None, mu=0.0)
    table, acc, sizes = o.probe_table()
    assert (table["steps"] == 1).all()
    assert set(acc) == set(o.domains) and all(0 <= a <= 100 for a in acc.values())
    o.round_stats()  # every client's update at w_t
    D = torch.stack([o._updates[i][0] for i in range(len(table))])
    for d in o.domains:
        x, y = o._sets["val"][d]
        W = o.params.unsqueeze(0) + D
        M = len(W)
        L = loss_stacked(o.arch, W, x.expand(M, *x.shape), y.expand(M, -1)).detach().numpy()
        L0 = float(loss_stacked(o.arch, o.params.unsqueeze(0), x[None], y[None])[0])
        dec = L0 - L
        first = table[f"x_{d}"].to_numpy()
        assert np.max(np.abs(dec - first)) <= 0.15 * np.max(np.abs(dec))
        assert spearmanr(dec, first).statistic > 0.9


def test_baseline_rule_picks_the_same_clients_as_with_fresh_statistics():
    """A rule run in the simulator on the probe pass chooses what it would on fresh statistics:
    it reads only sizes, F and loss, which the probe pass gives exactly."""
    _, a = _run("fisher-topk")
    _, b = _run("fisher-topk@fresh")
    assert list(a["selected"]) == list(b["selected"])
    # charged by what it names: the rule for its reads, an explicit @fresh for everyone
    assert (a["cost_train_samples"] < b["cost_train_samples"]).all()
