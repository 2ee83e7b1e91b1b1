"""The picks' aggregation weights as a decision: by hand, per rule as its authors aggregate,
through the spec (``agg=``), and in the loop, where the oracle receives them and the history
records them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.aggregation import Aggregation, aggregation_weights, parse_aggregation
from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.selectors import make_selector
from selection.specs import parse_spec

# Digits-4's sizes: two MNIST clients, one USPS, one SVHN, one SYN
IDS = ["mnist-0", "mnist-1", "usps-0", "svhn-0", "syn-0"]
N = [600, 600, 72, 732, 100]
DOM = ["mnist", "mnist", "usps", "svhn", "syn"]


def _round() -> pd.DataFrame:
    return pd.DataFrame(
        {"round": 0, "client_id": IDS, "domain": DOM, "n_samples": N, "F": [5.0, 4, 3, 2, 1],
         "B": 0.1, "cos_g": 0.5, "U": [70.0, 60, 50, 40, 30], "loss": [1.0, 2, 3, 4, 5],
         **{f"U_{d}": 50.0 for d in ("mnist", "usps", "svhn", "syn")}}
    )  # fmt: skip


def test_the_three_rules_by_hand():
    w = aggregation_weights("samples", IDS, N, DOM)
    assert w["usps-0"] == pytest.approx(72 / 2104) and w["svhn-0"] == pytest.approx(732 / 2104)
    assert set(aggregation_weights("uniform", IDS, N, DOM).values()) == {0.2}
    d = aggregation_weights("domain", IDS, N, DOM)  # 4 domains: 1/4 each, MNIST split in two
    assert d == pytest.approx({"mnist-0": 0.125, "mnist-1": 0.125, "usps-0": 0.25,
                               "svhn-0": 0.25, "syn-0": 0.25})  # fmt: skip
    for kind in Aggregation:
        assert sum(aggregation_weights(kind, IDS, N, DOM).values()) == pytest.approx(1.0)


def test_unknown_rules_and_misaligned_inputs_are_named():
    with pytest.raises(SelectionError, match="one of samples, uniform, domain"):
        parse_aggregation("median")
    with pytest.raises(SelectionError, match="2 picks, 1 sizes"):
        aggregation_weights("uniform", ["a", "b"], [1], ["x", "y"])
    with pytest.raises(SelectionError, match="aggregation 'x'"):
        parse_spec("eps:5@agg=x")


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        # as the authors' code aggregates (FedScale, Cho et al. / FedCor's pow-d, FedCor,
        # Fraboni et al.): 1/K
        ("oort:0.9", "uniform"),
        ("power-of-choice:5", "uniform"),
        ("fedcor:5", "uniform"),
        ("clustered:1", "uniform"),
        # FedAvg and the rules without a reference aggregation: sample weights (the trainer's)
        ("fedavg", None),
        ("proportional", None),
        ("fisher-topk", None),
        ("eps:50", None),
        # a spec's agg= chooses, for a formulation or against a rule's authors (an ablation)
        ("eps:50@agg=domain", "domain"),
        ("oort:0.9@agg=samples", "samples"),
        ("fisher-topk@agg=uniform", "uniform"),
        ("qffl:1@agg=uniform", "uniform"),
    ],
)
def test_each_selector_weights_its_picks_as_it_says(spec, kind):
    sel = make_selector(spec, seed=3)
    table = _round()
    ids = sel(table, 5)
    problem = SelectionProblem.from_stats(table, 5)
    got = sel.aggregation_weights(problem, ids)
    if kind is None:
        assert got is None  # the trainer's sample weights
    else:
        sizes = dict(zip(IDS, N, strict=True))
        doms = dict(zip(IDS, DOM, strict=True))
        want = aggregation_weights(kind, ids, [sizes[c] for c in ids], [doms[c] for c in ids])
        assert got == pytest.approx(want)


def test_the_canonical_spec_keeps_agg_last_and_drops_nothing():
    s = parse_spec("maxmin:2@agg=uniform+probe")
    assert s.canonical == "maxmin:2@probe+agg=uniform"
    assert parse_spec(s.canonical) == s
    assert s.aggregation is Aggregation.UNIFORM and parse_spec("maxmin:2").aggregation is None


@pytest.mark.parametrize(("spec", "kind"), [("oort:0.9", "uniform"), ("eps-rel:0.5@agg=domain",
                                             "domain"), ("fedavg", None)])  # fmt: skip
def test_the_loop_commits_and_records_the_weights(spec, kind):
    pytest.importorskip("fl_oracle.experiments.loop")
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    from helpers import fake_oracle as fake

    oracle = fake.FakeOracle(0, clients_per_domain=2)
    sel = make_selector(spec, seed=0)
    h = run_training(
        oracle, plan_run(sel, rounds=3, k=3, name=spec, stats_mode=sel.spec.information)
    ).history
    table = oracle.clients.set_index("client_id")
    for (picked, weights), recorded in zip(oracle.steps, h["agg_weights"], strict=True):
        if kind is None:
            assert weights is None and recorded == ""
            continue
        want = aggregation_weights(
            kind, picked, table.loc[picked, "n_samples"], table.loc[picked, "domain"]
        )
        assert weights == pytest.approx(want)
        assert np.allclose([float(x) for x in recorded.split(";")], [want[c] for c in picked],
                           rtol=1e-5)  # fmt: skip


def test_a_default_argument_is_one_spelling():
    """eps-lt's V defaults to 10: eps-lt:5 and eps-lt:5,10 are one selector (one canonical
    spec), so a study refuses them as two entries; another V stays apart."""
    pytest.importorskip("fl_oracle.experiments.study.settings")
    from fl_oracle.experiments.study.settings import StudySettings

    assert parse_spec("eps-lt:5,10").canonical == parse_spec("eps-lt:5").canonical == "eps-lt:5"
    assert parse_spec("fisher-lt:5,10.0@probe").canonical == "fisher-lt:5@probe"
    assert parse_spec("eps-lt:5,20").canonical == "eps-lt:5,20"
    with pytest.raises(ValueError, match="are the same selector"):
        StudySettings(selectors=("proportional", "eps-lt:5", "eps-lt:5,10"))
