"""Build one page of each report kind, small and fast, for the browser test and the screenshots.

``build_all(out)`` writes, under ``out``: ``sweep/front.html`` (ε complete front),
``sweep-maxmin/front.html``, ``sweep-rounds/front.html`` (one front per round),
``compare/compare.html``, ``analyze/analysis.html`` (all from a round-stats table: the shipped
example or a synthetic one), ``demo/report.html``, ``study/report.html`` and ``map/map.html``
(a grid study's map; all three on the test suite's fake oracle, pure numpy). Returns
``{kind: path}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a script: python tests/helpers/reports.py OUT
    import fl_oracle  # noqa: F401  the packages first: on the path, tests/fl_oracle and
    import selection  # noqa: F401  tests/selection would be taken for them

    sys.path[0] = str(Path(__file__).resolve().parents[1])  # tests/, for ``helpers``

import pandas as pd  # noqa: E402

from helpers import ROOT  # noqa: E402
from helpers import fake_oracle as fake  # noqa: E402

EXAMPLE = ROOT / "results" / "examples" / "stats.csv"


def _cli(argv: list[str]) -> None:
    from fl_oracle.cli import main

    try:
        main([str(a) for a in argv])
    except SystemExit as exc:  # main exits only on errors (and --help / --version)
        if exc.code:
            raise RuntimeError(f"fedsel {' '.join(map(str, argv))} exited {exc.code}") from None


def multi_round_stats(path: Path, rounds: int = 3) -> Path:
    """A stats table of ``rounds`` rounds of the fake oracle under proportional selection."""
    o = fake.FakeOracle(0, clients_per_domain=5)
    tables = []
    for _ in range(rounds):
        t = o.round_stats()
        tables.append(t)
        o.step(list(t.sort_values("n_samples", ascending=False)["client_id"][:5]))
    pd.concat(tables, ignore_index=True).to_csv(path, index=False)
    return path


def build_demo(out: Path, seeds: int = 3, rounds: int = 5) -> Path:
    from fl_oracle.experiments.demo.report import write_outputs
    from fl_oracle.experiments.demo.run import DemoSettings, run_demo
    from selection.selectors import make_selector

    settings = DemoSettings(
        rounds=rounds,
        seeds=seeds,
        k=3,
        selectors=("proportional", "random", "fisher-topk", "eps:5", "maxmin:2", "qffl:1"),
    )
    result = run_demo(
        lambda s: fake.FakeOracle(seed=s, clients_per_domain=3), make_selector, settings
    )
    write_outputs(result, out)
    return out / "report.html"


def build_study(out: Path, seeds: int = 3, rounds: int = 5) -> Path:
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.runs import run_study
    from fl_oracle.experiments.study.settings import StudySettings
    from selection.selectors import make_selector

    s = StudySettings(
        seeds=seeds,
        rounds=rounds,
        k=3,
        selectors=("proportional", "random", "eps-rel:0.5", "maxmin:2", "eps:5@stale"),
        bootstrap=500,
        target_worst=50.0,
    )
    run_study(
        s,
        out,
        make_oracle=lambda seed: fake.FakeOracle(seed, clients_per_domain=2),
        make_selector=make_selector,
    )
    finish_study(s, out)
    return out / "report.html"


def build_map(out: Path, seeds: int = 3, rounds: int = 4) -> Path:
    """A grid study's map on the fake oracle (cells differ by K and clients per domain)."""
    from fl_oracle.experiments.study.assembly import finish_study
    from fl_oracle.experiments.study.grid import GridSettings
    from fl_oracle.experiments.study.grid_run import run_grid
    from fl_oracle.experiments.study.runs import run_study
    from selection.selectors import make_selector

    grid = GridSettings.from_toml(
        f"seeds = {seeds}\nrounds = {rounds}\nk = 3\nbootstrap = 300\nconfirm_seeds = 2\n"
        'target_worst = 50.0\nselectors = ["proportional", "random", "eps-rel:0.5", "maxmin:2"]\n'
        "[oracle]\nclients_per_domain = 2\n"
        "[[grid]]\nk = [2, 3, 4]\n[[grid]]\nk = [3]\nclients_per_domain = [3]\n"
    )

    def run_cell(settings, folder, label):
        cpd = int(settings.oracle.get("clients_per_domain", 2))
        run_study(
            settings, folder, make_selector=make_selector,
            make_oracle=lambda seed: fake.FakeOracle(seed, clients_per_domain=cpd),
        )  # fmt: skip
        return finish_study(settings, folder)

    run_grid(grid, out, run_cell=run_cell)
    return out / "map.html"


def build_all(out: Path, stats: Path | None = None) -> dict[str, Path]:
    """Every report kind under ``out`` (see the module docstring)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stats = Path(stats) if stats is not None else EXAMPLE
    multi = multi_round_stats(out / "rounds-stats.csv")
    common = ["--stats", stats, "--k", 5]
    _cli(["sweep", *common, "--method", "eps", "--out", out / "sweep"])
    _cli(["sweep", *common, "--method", "maxmin", "--out", out / "sweep-maxmin"])
    _cli(["sweep", "--stats", multi, "--k", 5, "--method", "eps", "--per-round", "all",
          "--out", out / "sweep-rounds"])  # fmt: skip
    _cli(["compare", *common, "--out", out / "compare"])
    _cli(["analyze", "--stats", multi, "--out", out / "analyze", "--boot", 100])
    return {
        "sweep": out / "sweep" / "front.html",
        "sweep-maxmin": out / "sweep-maxmin" / "front.html",
        "sweep-rounds": out / "sweep-rounds" / "front.html",
        "compare": out / "compare" / "compare.html",
        "analyze": out / "analyze" / "analysis.html",
        "demo": build_demo(out / "demo"),
        "study": build_study(out / "study"),
        "map": build_map(out / "map"),
    }


if __name__ == "__main__":
    print(build_all(Path(sys.argv[1])))
