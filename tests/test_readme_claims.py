"""The README's numbers are the committed runs' and the code's numbers (the demo table, its time
and record, the federation's sizes), and so are the documentation site's copies of them."""

import re
import tomllib
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS_PAGE = (ROOT / "docs/results/index.md").read_text(encoding="utf-8")


def _demo_table(summary: pd.DataFrame) -> str:
    """The README's demo table as the committed summary.csv gives it."""
    rows = ["| selector | avg % | worst domain % | gap pp |", "|---|---:|---:|---:|"]
    for r in summary.to_dict("records"):
        name = r["selector"]
        if name == "proportional":
            name += " (FedAvg default)"
        if r["fallback_rounds"]:
            name += f" ({r['fallback_rounds']} fallback rounds)"
        cells = [f"{r[f'{m}_mean']:.1f} ± {r[f'{m}_std']:.1f}" for m in ("avg", "worst", "gap")]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_the_demo_table_is_the_committed_summary():
    summary = pd.read_csv(ROOT / "results/demo/summary.csv")
    assert _demo_table(summary) in README
    assert _demo_table(summary) in RESULTS_PAGE


def test_the_demo_time_and_commit_are_the_committed_record():
    record = ROOT / "results/demo/record.toml"
    rec = tomllib.loads(record.read_text(encoding="utf-8"))["run"]
    assert not rec["git_commit"].endswith("-dirty"), "the committed demo came from a dirty tree"
    for text in (README, RESULTS_PAGE):
        m = re.search(r"`make demo-example` \(([0-9]+) min ([0-9]+) s", text)
        assert m, "the README states the committed demo's time"
        assert int(m[1]) * 60 + int(m[2]) == round(rec["seconds"])
        assert rec["git_commit"][:7] in text


def test_the_federation_sizes_are_the_defaults():
    from selection.schema import DEFAULT_SAMPLES_PER_CLIENT as n

    sizes = " / ".join(str(n[d]) for d in ("mnist", "usps", "svhn", "syn"))
    assert f"{sizes} samples per" in README
    share = 100 * (n["mnist"] + n["svhn"]) / sum(n.values())
    assert f"MNIST and SVHN carry {share:.1f} % of the sample weight" in README


def _scale_table(df: pd.DataFrame) -> str:
    """The README's scale table as the committed federation_scale.csv gives it."""
    rows = [
        "| N | K | selector | peak memory MB | s per round | solve share of the round | route |",
        "|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in df.to_dict("records"):
        rows.append(
            f"| {r['N']:,} | {r['K']} | `{r['selector']}` | {r['peak_rss_mb']:,.0f} | "
            f"{r['round_s']:.1f} | {100 * r['solve_share']:.2f} % | {r['route']} |"
        )
    return "\n".join(rows)


def test_the_scale_table_is_the_committed_benchmark():
    """N <= 200 from the rerun on the current code (federation_scale_small), the larger N from
    the full run; each file's load is stated beside the table."""
    small = pd.read_csv(ROOT / "results/benchmarks/federation_scale_small.csv")
    full = pd.read_csv(ROOT / "results/benchmarks/federation_scale.csv")
    df = pd.concat([small, full[full["N"] > small["N"].max()]], ignore_index=True)
    assert _scale_table(df) in README
    bench = (ROOT / "results/benchmarks/federation_scale.md").read_text(encoding="utf-8")
    load = re.search(r"Load average \(1, 5, 15 min\) before: ([0-9., ]+); after", bench)
    assert load and load[1] in README  # the machine's load is stated beside the table
    rerun = (ROOT / "results/benchmarks/federation_scale_small.md").read_text(encoding="utf-8")
    load = re.search(r"Load average \(1, 5, 15 min\) before: ([0-9.]+),", rerun)
    assert load and f"load {load[1]} before" in README


def test_the_baselines_of_record_paragraph_is_the_committed_studies():
    """The README's sentence on the baselines-of-record study and its confirmation: the best
    entry beats 10 of the 12 counted baselines on both final metrics in both, the two it does
    not beat are fisher-topk and qffl:1, and its compute to the target is the verdicts'."""
    from fl_oracle.experiments.study.settings import is_baseline
    from selection.specs import parse_spec

    flat = " ".join(README.split())
    assert "beats 10 of the 12 on both final metrics" in flat
    assert "1.22–1.27× the best baseline's client compute" in flat
    for study, ratio in (("study-baselines", "1.27x"), ("study-baselines-confirm", "1.22x")):
        d = pd.read_csv(ROOT / "results" / study / "dominance.csv")
        entries = pd.read_csv(ROOT / "results" / study / "cost.csv")["entry"]
        counted = {e for e in entries if is_baseline(parse_spec(e))}
        assert len(counted) == 12
        best = d[(d["entry"] == "eps-lt:5@probe") & d["baseline"].isin(counted)]
        assert int(best["beats"].sum()) == 10
        assert set(best.loc[~best["beats"], "baseline"]) == {"fisher-topk", "qffl:1"}
        verdict = (ROOT / "results" / study / "verdict.md").read_text(encoding="utf-8")
        assert f"eps-lt:5@probe {ratio}" in verdict


def test_the_map_sentences_are_the_committed_map():
    """The README's two sentences on the map: the one cell where a formulation leads (Dirichlet
    0.5), its screen and held-out figures, the two clearest baseline leads, and no cell
    confirmed — each read from results/map (grid.csv, the cell's held-out dominance.csv)."""
    flat = " ".join(README.split())
    grid = pd.read_csv(ROOT / "results" / "map" / "grid.csv").set_index("cell")
    assert len(grid) == 8 and "Across a map of eight federations" in flat

    def interval(row, panel) -> str:
        d, lo, hi = (row[f"{panel}_{c}"] for c in ("diff", "ci_lo", "ci_hi"))
        return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]".replace("-", "−")

    skew = grid.loc["k5-alpha0.5-sigma0-cpd5"]
    assert skew["worst_leader"] == "fisher-fair:1@probe" and skew["worst_beats"] == "12/12"
    assert f"({interval(skew, 'worst')} points over the best" in flat
    assert f"at {skew['worst_compute_ratio']:.2f}× FedAvg's client compute" in flat
    assert int(skew["worst_confirm_beats"]) == 11 and skew["worst_status"] == "not confirmed"
    held = pd.read_csv(ROOT / "results/map/cells/k5-alpha0.5-sigma0-cpd5/confirm/dominance.csv")
    topk = held[(held["entry"] == "fisher-fair:1@probe") & (held["baseline"] == "fisher-topk")]
    r = topk.iloc[0]
    text = f"{r.final_worst_diff:+.1f} [{r.final_worst_ci_lo:+.1f}, {r.final_worst_ci_hi:+.1f}]"
    assert f"all but `fisher-topk` ({text.replace('-', '−')})" in flat
    assert r.final_worst_ci_lo < 0 < r.final_worst_ci_hi
    assert skew["avg_status"] == "not confirmed"
    assert f"({interval(grid.loc['k5-alphanone-sigma1-cpd5'], 'worst')})" in flat
    assert f"({interval(grid.loc['k5-alpha0.1-sigma0-cpd5'], 'avg')})" in flat
    for cell in (
        "k2-alphanone-sigma0-cpd5",
        "k5-alphanone-sigma0-cpd5",
        "k10-alphanone-sigma0-cpd5",
    ):
        assert grid.loc[cell, "worst_best_baseline"] in ("fisher-topk", "qffl:1")
    assert grid.loc["k10-alphanone-sigma0-cpd25", "worst_best_baseline"] == "divfl:probe"
    ahead = grid[(grid["worst_diff"] > 0)].index.tolist()
    assert ahead == ["k5-alpha0.5-sigma0-cpd5"]
    assert not (grid[["worst_status", "avg_status"]] == "confirmed").any().any()
    assert "no cell has a formulation confirmed against every baseline" in flat


def test_the_fair_fight_paragraph_is_the_committed_study():
    """The README's fair-fight sentences: each paired difference is the committed pairs
    table's, the beaten counts the study's dominance table, the compute ratio its cost table."""
    from fl_oracle.experiments.study.settings import is_baseline
    from selection.specs import parse_spec

    flat = " ".join(README.split())
    pairs = pd.read_csv(ROOT / "results/benchmarks/fair_fight_pairs.csv").set_index(["A", "B"])

    def said(a, b, metric):
        r = pairs.loc[(a, b)]
        d, lo, hi = r[f"acc_{metric}_diff"], r[f"acc_{metric}_lo"], r[f"acc_{metric}_hi"]
        return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]".replace("-", "−")

    assert (
        f"power-of-choice's final worst-domain accuracy by {said('power-of-choice:10', 'power-of-choice:10@agg=samples', 'worst')}"
        in flat
    )
    assert f"Oort's by {said('oort:0.9', 'oort:0.9@agg=samples', 'worst')}" in flat
    assert f"ends {said('proportional', 'fedavg', 'worst')} points below FedAvg" in flat
    assert (
        f"1/K weights gains {said('fisher-fair:1@probe+agg=uniform', 'fisher-fair:1@probe', 'worst')}"
        in flat
    )
    tie = ("fisher-fair:1@probe+agg=uniform", "fisher-topk@agg=uniform")
    assert f"({said(*tie, 'worst')} on the worst domain, {said(*tie, 'avg')} on average)" in flat
    d = pd.read_csv(ROOT / "results/study-fair-fight/dominance.csv")
    cost = pd.read_csv(ROOT / "results/study-fair-fight/cost.csv").set_index("entry")
    counted = {e for e in cost.index if is_baseline(parse_spec(e))}
    assert len(counted) == 13

    def beaten(entry):
        g = d[(d["entry"] == entry) & d["baseline"].isin(counted)]
        return int(g["beats"].sum()), set(g.loc[~g["beats"], "baseline"])

    assert beaten("fisher-fair:1@probe+agg=uniform") == (
        11,
        {"oort:0.9", "fisher-topk@agg=uniform"},
    )
    assert beaten("fisher-fair:1@probe")[0] == 5 and "(5 of 13 with sample weights)" in flat
    assert beaten("fisher-fair:1@probe+agg=domain")[0] == 11
    assert f"at {cost.loc['fisher-fair:1@probe+agg=domain', 'compute_ratio']:.2f}× FedAvg's" in flat
    summary = pd.read_csv(ROOT / "results/study-fair-fight/summary.csv")
    top = summary.sort_values("final_worst_mean", ascending=False)["entry"].iloc[0]
    assert top == "fisher-topk@agg=uniform"  # "the highest entry on the worst domain"


def test_the_fair_fight_confirmation_sentence_is_the_committed_study():
    """The held-out sentence: 11 of 13 again, the compute ratio, ahead of every counted
    baseline on the worst domain, and the two average-accuracy intervals that include zero —
    each read from results/study-fair-fight-confirm (dominance.csv, cost.csv)."""
    from fl_oracle.experiments.study.settings import is_baseline
    from selection.specs import parse_spec

    flat = " ".join(README.split())
    folder = ROOT / "results" / "study-fair-fight-confirm"
    d = pd.read_csv(folder / "dominance.csv")
    cost = pd.read_csv(folder / "cost.csv").set_index("entry")
    entry = "fisher-fair:1@probe+agg=uniform"
    counted = [e for e in cost.index if is_baseline(parse_spec(e))]
    g = d[(d["entry"] == entry) & d["baseline"].isin(counted)].set_index("baseline")
    assert len(g) == 13 and int(g["beats"].sum()) == 11
    assert set(g.index[~g["beats"]]) == {"fisher-topk@agg=uniform", "power-of-choice:10"}
    assert "again beats 11 of the 13" in flat
    assert f"at {cost.loc[entry, 'compute_ratio']:.2f}× FedAvg's client compute" in flat
    assert (g["final_worst_ci_lo"] > 0).all()  # ahead of every one on the worst domain

    def ci(row, m):
        return (
            f"{row[f'{m}_diff']:+.1f} [{row[f'{m}_ci_lo']:+.1f}, {row[f'{m}_ci_hi']:+.1f}]".replace(
                "-", "−"
            )
        )

    topk, poc = g.loc["fisher-topk@agg=uniform"], g.loc["power-of-choice:10"]
    assert f"by {ci(topk, 'final_worst')} points" in flat
    assert f"({ci(topk, 'final_avg')} and {ci(poc, 'final_avg')})" in flat
    assert topk["final_avg_ci_lo"] < 0 < topk["final_avg_ci_hi"]


def test_the_fair_fights_published_rules_and_joint_weights_are_the_committed_study():
    """The fair fight's sentences on FedCor and DivFL as published and on weights chosen with
    the picks (README and the baselines page): paired differences from the committed study's
    paired.csv (against FedAvg) and pairs table, final accuracies from its summary, the beaten
    count from its dominance table."""
    from fl_oracle.experiments.study.settings import is_baseline
    from selection.specs import parse_spec

    flat = " ".join(README.split())
    page = " ".join((ROOT / "docs/results/baselines.md").read_text(encoding="utf-8").split())
    folder = ROOT / "results" / "study-fair-fight"
    paired = pd.read_csv(folder / "paired.csv").set_index(["entry", "metric"])
    summary = pd.read_csv(folder / "summary.csv").set_index("entry")

    def vs_fedavg(entry):
        r = paired.loc[(entry, "final_worst")]
        return f"{r['diff']:+.1f} [{r['ci_lo']:+.1f}, {r['ci_hi']:+.1f}]".replace("-", "−")

    for entry in ("fedcor:5", "divfl:stale"):
        final = f"{summary.loc[entry, 'final_worst_mean']:.1f} %"
        assert f"at {final}" in page, entry
        assert vs_fedavg(entry) in page, entry
    held = pd.read_csv(ROOT / "results/study-fair-fight-confirm/paired.csv")
    held = held[held["metric"] == "final_worst"].set_index("entry")
    both = [f"{held.loc[e, 'diff']:+.1f} [{held.loc[e, 'ci_lo']:+.1f}, {held.loc[e, 'ci_hi']:+.1f}]"
            for e in ("fedcor:5", "divfl:stale")]  # fmt: skip
    assert f"{both[0]} and {both[1]} over FedAvg".replace("-", "−") in page
    pairs = pd.read_csv(ROOT / "results/benchmarks/fair_fight_pairs.csv").set_index(["A", "B"])

    def said(a, b, metric):
        r = pairs.loc[(a, b)]
        d, lo, hi = r[f"acc_{metric}_diff"], r[f"acc_{metric}_lo"], r[f"acc_{metric}_hi"]
        return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]".replace("-", "−")

    best = ("fisher-fair:1@probe+weighted+agg=best", "fisher-fair:1@probe+agg=uniform")
    assert f"({said(*best, 'worst')} on the worst domain" in flat
    assert f"({said(*best, 'worst')} on the worst domain, {said(*best, 'avg')} on average)" in page
    r = pairs.loc[best]
    assert r["acc_worst_lo"] < 0 < r["acc_worst_hi"]  # "not shown better"
    lt = said("eps-lt:5@probe+weighted+agg=best", "eps-lt:5@probe", "worst")
    assert f"beats none ({lt} on the worst domain" in page
    d = pd.read_csv(folder / "dominance.csv")
    counted = {e for e in summary.index if is_baseline(parse_spec(e))}
    beats = d[d["baseline"].isin(counted)].groupby("entry")["beats"].sum()
    assert int(beats["fisher-fair:1@probe+weighted+agg=best"]) == 7 and "beats 7 of the 13" in page
    assert int(beats["eps-lt:5@probe+weighted+agg=best"]) == 0
