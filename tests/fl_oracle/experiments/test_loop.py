"""Live training loop (fl_oracle.experiments.loop) on a pure-numpy fake oracle."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from fl_oracle.experiments.loop import run_training
from fl_oracle.experiments.plan import plan_run
from fl_oracle.experiments.round_step import domain_metrics, qffl_weights
from selection.errors import InfeasibleError, SelectionError
from selection.schema import validate_stats

from helpers import fake_oracle as fake

DOMAINS = list(fake.DOMAINS)


def top_u(df: pd.DataFrame, k: int) -> list[str]:
    return list(df.sort_values(["U", "client_id"], ascending=[False, True])["client_id"][:k])


def test_history_columns_and_domain_metrics():
    o = fake.FakeOracle(seed=1)
    res = run_training(o, plan_run(top_u, rounds=2, k=3, name="top-u", seed=1))
    h = res.history
    expected = [
        "round",
        "selector",
        "seed",
        "stats_mode",
        "k",
        "selected",
        *[f"acc_{d}" for d in DOMAINS],
        "acc_avg",
        "acc_worst",
        "acc_gap",
        "acc_std",
        "pred_utility",
        "pred_gap",
        "pred_worst",
        "surrogate",
        "solve_seconds",
        "route",
        "fallback",
        "round_seconds",
        "round_cpu_seconds",
        "cost_train_samples",
        "cost_probe_samples",
        "cost_bytes_up",
        "cost_bytes_down",
        "upper_bound",
        "agg_weights",
        "global_loss",
    ]
    assert list(h.columns) == expected
    assert list(h["round"]) == [0, 1] and o.round == 2
    acc = h[[f"acc_{d}" for d in DOMAINS]].to_numpy()
    np.testing.assert_allclose(h["acc_worst"], acc.min(axis=1))
    np.testing.assert_allclose(h["acc_avg"], acc.mean(axis=1))
    np.testing.assert_allclose(h["acc_gap"], acc.max(axis=1) - acc.min(axis=1))
    # exactly the selected clients were committed, and the history reports them
    assert [";".join(s) for s, _ in o.steps] == list(h["selected"])
    assert all(len(s.split(";")) == 3 for s in h["selected"])
    # accuracies are those of the new model after each step
    assert h["acc_mnist"].iloc[-1] == pytest.approx(o.test_accuracy()["acc_mnist"])


def test_predicted_values_are_the_linear_model_of_the_round():
    o = fake.FakeOracle(seed=2)
    res = run_training(o, plan_run(top_u, rounds=1, k=2, name="top-u"))
    st = res.stats[res.stats["chosen"]]
    ud = st[[f"U_{d}" for d in DOMAINS]].to_numpy().mean(axis=0)
    row = res.history.iloc[0]
    assert row["pred_utility"] == pytest.approx(st["U"].mean())
    assert row["pred_worst"] == pytest.approx(ud.min())
    assert row["pred_gap"] == pytest.approx(ud.max() - ud.min())
    assert set(st["client_id"]) == set(row["selected"].split(";"))


def test_fresh_mode_measures_all_clients_every_round():
    o = fake.FakeOracle()
    res = run_training(o, plan_run(top_u, rounds=3, k=2, name="top-u", stats_mode="fresh"))
    assert [len(m) for m in o.measured] == [8, 8, 8]
    assert (res.stats["measured_round"] == res.stats["round"]).all()
    validate_stats(res.stats)


def test_stale_mode_sees_each_clients_last_report():
    o = fake.FakeOracle(seed=3)
    res = run_training(o, plan_run(top_u, rounds=3, k=3, name="top-u", stats_mode="stale"))
    h, st = res.history, res.stats
    assert len(o.measured[0]) == 8  # round 0: nothing reported yet, every client trains once
    # afterwards only the committed clients are measured, from the updates they train anyway
    assert [sorted(m) for m in o.measured[1:]] == [
        sorted(h["selected"].iloc[t].split(";")) for t in (1, 2)
    ]
    assert list(h["cost_train_samples"].isna()) == [True] * 3  # the fake reports no work
    for t in (1, 2):
        prev = set(h["selected"].iloc[t - 1].split(";"))
        now = st[st["round"] == t].set_index("client_id")
        before = st[st["round"] == t - 1].set_index("client_id")
        assert (now.loc[list(prev), "measured_round"] == t - 1).all()
        assert (now["age"] == t - now["measured_round"]).all()
        others = now.index.difference(list(prev))
        cols = ["U", "F", "B", "cos_g", "measured_round"]
        pd.testing.assert_frame_equal(now.loc[others, cols], before.loc[others, cols])
    # the previous picks carry what they reported when they trained (round t-1's values)
    o2 = fake.FakeOracle(seed=3)
    first = o2.round_stats().set_index("client_id")
    picks = h["selected"].iloc[0].split(";")
    row1 = st[st["round"] == 1].set_index("client_id")
    np.testing.assert_allclose(row1.loc[picks, "U"], first.loc[picks, "U"])


class _Infeasible:
    def __call__(self, df, k):
        raise InfeasibleError("eps=0: no selection has gap <= 0")


def test_failing_selector_falls_back_and_says_so():
    o = fake.FakeOracle(seed=4)
    res = run_training(o, plan_run(_Infeasible(), rounds=2, k=3, name="eps:0"))
    assert res.history["fallback"].str.contains("selector failed").all()
    assert res.history["fallback"].str.contains("eps=0").all()
    assert [len(s) for s, _ in o.steps] == [3, 3]
    # the committed point is the smallest-gap selection of the round (exhaustive check)
    from itertools import combinations

    first = res.stats[res.stats["round"] == 0]
    ud = first[[f"U_{d}" for d in DOMAINS]].to_numpy()
    gaps = [np.ptp(ud[list(c)].mean(axis=0)) for c in combinations(range(len(first)), 3)]
    assert res.history["pred_gap"].iloc[0] == pytest.approx(min(gaps), abs=1e-5)


def test_selector_fallback_message_is_logged():
    from selection.selectors import CallableSelector

    class Sel(CallableSelector):  # a Selector's last solve and fallback reach the history
        fallback_text = "eps=0.1 infeasible; took the smallest gap"

        def __init__(self):
            super().__init__(top_u, "eps:0.1")

        def __call__(self, df, k, logits=None):
            self.last = SimpleNamespace(seconds=0.25, backend="")
            self.fallback = self.fallback_text
            return top_u(df, k)

    res = run_training(fake.FakeOracle(), plan_run(Sel(), rounds=1, k=2, name="eps:0.1"))
    assert res.history["fallback"].iloc[0] == Sel.fallback_text
    assert res.history["solve_seconds"].iloc[0] == 0.25


def test_other_selector_errors_are_not_swallowed():
    def broken(df, k):
        raise SelectionError("power-of-choice:2: d=2 must be at least k=3")

    with pytest.raises(SelectionError, match="d=2"):
        run_training(fake.FakeOracle(), plan_run(broken, rounds=1, k=3, name="power-of-choice:2"))


def test_qffl_weights_follow_loss_power():
    st = pd.DataFrame({"client_id": ["a", "b"], "n_samples": [100, 300], "loss": [2.0, 1.0]})
    w = qffl_weights(st, ["a", "b"], 1.0)
    assert w == pytest.approx({"a": 0.4, "b": 0.6})
    assert qffl_weights(st, ["a", "b"], 0.0) == pytest.approx({"a": 0.25, "b": 0.75})
    with pytest.raises(ValueError, match="q=-1"):
        qffl_weights(st, ["a"], -1.0)

    from selection.selectors import CallableSelector

    q = CallableSelector(top_u, "qffl:2")  # the top-U picks, weighted as q-FFL with q = 2
    q.aggregation_q = 2.0
    o = fake.FakeOracle()
    run_training(o, plan_run(q, rounds=1, k=2, name="qffl:2"))
    sel, weights = o.steps[0]
    assert set(weights) == set(sel) and sum(weights.values()) == pytest.approx(1.0)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="stats mode"):
        run_training(fake.FakeOracle(), plan_run(top_u, rounds=1, k=2, name="x", stats_mode="old"))
    with pytest.raises(ValueError, match="rounds=0"):
        run_training(fake.FakeOracle(), plan_run(top_u, rounds=0, k=2, name="x"))
    with pytest.raises(SelectionError, match="k=9"):
        run_training(fake.FakeOracle(), plan_run(top_u, rounds=1, k=9, name="x"))
    with pytest.raises(SelectionError, match="unknown: nobody"):
        run_training(fake.FakeOracle(), plan_run(lambda df, k: ["nobody"], rounds=1, k=1, name="x"))
    with pytest.raises(ValueError, match="acc_syn"):
        domain_metrics({"acc_mnist": 1.0}, ["mnist", "syn"])


# ---------------------------------------------------------------- the real oracle, tiny federation
def _tiny_config(seed: int = 0, **changes):
    from fl_oracle.sim.config import OracleConfig

    base = fake.tiny_overrides()
    base.update({k: v for k, v in changes.items() if v is not None})
    return OracleConfig(seed=int(seed), **base)


@pytest.fixture(scope="module")
def tiny_cli(tmp_path_factory):
    """Run ``fedsel train`` in-process with the tiny federation injected."""
    pytest.importorskip("fl_oracle.sim.oracle")
    import fl_oracle.cli.train as cli_train
    from fl_oracle.cli import main
    from fl_oracle.sim.oracle import Oracle

    data = fake.tiny_data()
    mp = pytest.MonkeyPatch()
    keep = ("mu", "gamma", "k", "lr", "local_epochs")
    mp.setattr(
        cli_train,
        "make_config",
        lambda seed, federation=None, **kw: _tiny_config(
            seed, **{a: {**(federation or {}), **kw}.get(a) for a in keep}
        ),
    )
    mp.setattr(cli_train, "make_oracle", lambda config, data_=None, **_: Oracle(config, data=data))

    def run(*args: str) -> Path:
        out = tmp_path_factory.mktemp("train")
        try:
            main(["train", *args, "--out", str(out)])
        except SystemExit as exc:
            assert exc.code in (0, None), f"fedsel train {' '.join(args)} exited {exc.code}"
        return out

    yield run
    mp.undo()


# One two-round run per selector family (and per sampler).
FAMILIES = [
    "proportional",
    "power-of-choice:4",
    "fisher-topk",
    "all",
    "weighted:1,0,0,0,0",
    "maxmin:2",  # exact MILP routes (eps: see the fallback test)
    "nsga2:knee",
    "qffl:1",  # aggregation reweighting
]


@pytest.mark.parametrize("spec", FAMILIES)
def test_fedsel_train_two_rounds_per_selector_family(tiny_cli, spec):
    out = tiny_cli("--selector", spec, "--k", "3", "--rounds", "2", "--seed", "1")
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    st = pd.read_parquet(out / "stats.parquet")
    assert len(h) == 2 and list(h["round"]) == [0, 1] and (h["selector"] == spec).all()
    acc = h[[f"acc_{d}" for d in DOMAINS]].to_numpy()
    np.testing.assert_allclose(h["acc_worst"], acc.min(axis=1))
    np.testing.assert_allclose(h["acc_avg"], acc.mean(axis=1))
    assert ((acc >= 0) & (acc <= 100)).all()
    n_sel = 8 if spec == "all" else 3
    assert all(len(s.split(";")) == n_sel for s in h["selected"])
    validate_stats(st)
    assert len(st) == 2 * 8 and st.groupby("round")["chosen"].sum().tolist() == [n_sel, n_sel]
    for t in (0, 1):  # the history's selection is the one marked in that round's stats
        chosen = set(st[(st["round"] == t) & st["chosen"]]["client_id"])
        assert chosen == set(h["selected"].iloc[t].split(";"))
    assert (out / "config.toml").is_file()


def test_fedsel_train_passes_step_size_and_local_epochs_to_the_oracle(tiny_cli):
    import tomllib

    out = tiny_cli("--selector", "random", "--k", "3", "--rounds", "1")
    default = tomllib.loads((out / "config.toml").read_text())
    out = tiny_cli(
        "--selector", "random", "--k", "3", "--rounds", "1", "--lr", "0.2", "--local-epochs", "3"
    )
    cfg = tomllib.loads((out / "config.toml").read_text())
    assert (cfg["lr"], cfg["local_epochs"]) == (0.2, 3.0)
    assert (default["lr"], default["local_epochs"]) != (0.2, 3.0)


def test_fedsel_train_infeasible_eps_falls_back_in_the_log(tiny_cli):
    out = tiny_cli("--selector", "eps:0", "--k", "3", "--rounds", "2")
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    assert h["fallback"].str.contains("fell back to the smallest-gap point").all()
    assert (h["pred_gap"] > 0).all()


def test_fedsel_train_stale_remeasures_only_selected(tiny_cli):
    out = tiny_cli("--selector", "random", "--k", "3", "--rounds", "3", "--information", "stale")
    h = pd.read_csv(out / "history.csv", keep_default_na=False)
    st = pd.read_parquet(out / "stats.parquet")
    assert set(h["stats_mode"]) == {"stale"}
    assert (st[st["round"] == 1]["measured_round"] == 0).all()  # everyone reported in round 0
    for t in (2,):
        now = st[st["round"] == t].set_index("client_id")
        latest = set(now.index[now["measured_round"] == t - 1])
        assert latest == set(h["selected"].iloc[t - 1].split(";"))
        before = st[st["round"] == t - 1].set_index("client_id")
        others = sorted(set(now.index) - latest)
        pd.testing.assert_frame_equal(
            now.loc[others, ["U", "F", "loss"]], before.loc[others, ["U", "F", "loss"]]
        )


def test_fedsel_train_bad_input_is_one_line(tiny_cli, tmp_path, capsys):
    from fl_oracle.cli import main

    for args, needle in (
        (["--selector", "eps:x", "--k", "3"], "bad selector spec 'eps:x'"),
        (["--selector", "random", "--k", "3", "--information", "old"], "old"),
        (["--selector", "random", "--k", "99"], "k=99"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["train", *args, "--out", str(tmp_path / "x")])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x" / "history.csv").exists()
