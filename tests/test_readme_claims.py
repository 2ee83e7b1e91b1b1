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
