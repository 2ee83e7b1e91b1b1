"""The README's numbers are the committed runs' numbers (the demo table, its time and record)."""

from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


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
