"""Every route validates its options the same way, before any solver runs (issue 53: ``--backend
bb`` took ``--time-limit 0``, ``-1`` and ``nan``, which every other route refuses, and ``compare
--backend bb`` refused only after HiGHS had run): one shared check,
:func:`selection.solvers.params.check_route_options`, at every door."""

from __future__ import annotations

import math

import pytest

from selection.solvers.base import SweepOptions
from selection.solvers.milp.portfolio import backends
from selection.solvers.params import FRONT_ROUTE, check_route_options
from selection.solvers.registry import make_solver, solvers
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import synthetic_stats

from helpers.cli import run_fedsel

BAD_LIMITS = ["0", "-1", "nan", "-inf", "-0.5"]
ROUTES = [*backends(), FRONT_ROUTE]


@pytest.fixture(scope="module")
def stats_csv(tmp_path_factory):
    p = tmp_path_factory.mktemp("routes") / "stats.csv"
    synthetic_stats(10, seed=2).to_csv(p, index=False)
    return p


def _assert_refused(code: int, err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fedsel: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_a_bad_time_limit_is_refused_alike_on_every_route(route, limit):
    with pytest.raises(ValueError, match="time_limit=") as a:
        check_route_options(backend=route, time_limit=float(limit), front=True)
    with pytest.raises(ValueError, match="time_limit=") as b:
        SweepOptions(backend=route, time_limit=float(limit))
    assert str(a.value) == str(b.value)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_fedsel_sweep_refuses_a_bad_time_limit_on_every_route(route, limit, stats_csv, tmp_path,
                                                              capsys):  # fmt: skip
    argv = ["sweep", "--stats", stats_csv, "--k", 3, "--method", "eps", "--complete",
            "--backend", route, "--time-limit", limit, "--out", tmp_path / "o", "--no-progress"]  # fmt: skip
    code, _, err = run_fedsel(argv, capsys)
    _assert_refused(code, err, "time_limit=")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("method", list(solvers()))
@pytest.mark.parametrize("limit", ["0", "nan"])
def test_every_methods_sweep_refuses_a_bad_time_limit(method, limit, stats_csv, tmp_path, capsys):
    argv = ["sweep", "--stats", stats_csv, "--k", 3, "--method", method, "--time-limit", limit,
            "--out", tmp_path / "o", "--no-progress"]  # fmt: skip
    code, _, err = run_fedsel(argv, capsys)
    _assert_refused(code, err, "time_limit=")


@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_the_library_front_routes_refuse_a_bad_time_limit(limit):
    from selection.problem import SelectionProblem
    from selection.solvers.bb import bb_front

    problem = SelectionProblem.from_stats(synthetic_stats(8, seed=1), k=3)
    with pytest.raises(ValueError, match="time_limit="):
        sweep_eps(
            problem,
            complete=True,
            options=SweepOptions(backend=FRONT_ROUTE, time_limit=float(limit)),
        )
    with pytest.raises(ValueError, match="time_limit="):
        bb_front(problem, time_limit=float(limit))
    with pytest.raises(ValueError, match="time_limit="):
        make_solver("eps", eps=5.0, backend="highs", time_limit=float(limit))


def test_compare_refuses_bb_and_bad_options_before_any_solver_runs(
    stats_csv, tmp_path, capsys, monkeypatch
):
    import selection.compare as compare

    def ran(*args, **kwargs):
        raise AssertionError("a solver ran before the options were checked")

    monkeypatch.setattr(compare, "run_method", ran)
    for extra, needle in ((["--backend", "bb"], "backend bb computes the complete ε front"),
                          (["--time-limit", "0"], "time_limit="),
                          (["--time-limit", "nan"], "time_limit="),
                          (["--backend", "nope"], "unknown backend 'nope'"),
                          (["--seed", "-1"], "seed=-1"), (["--workers", "0"], "--workers")):  # fmt: skip
        argv = ["compare", "--stats", stats_csv, "--k", 3, *extra, "--out", tmp_path / "c",
                "--no-progress"]  # fmt: skip
        code, _, err = run_fedsel(argv, capsys)
        _assert_refused(code, err, needle)
    assert not (tmp_path / "c").exists()


def test_good_options_are_normalized_once():
    assert check_route_options(time_limit=math.inf, tolerance=0.5, seed=3, n_jobs=2) == {
        "time_limit": None, "tolerance": 0.5, "seed": 3, "n_jobs": 2}  # fmt: skip
    with pytest.raises(ValueError, match="backend bb computes a whole front"):
        check_route_options(backend=FRONT_ROUTE)  # one point: bb takes whole fronts only
    from selection.solvers.milp.portfolio import check_backend

    with pytest.raises(ValueError, match="unknown backend 'bb'"):
        check_backend(FRONT_ROUTE)  # the routes' names live with the MILP backends
    assert check_backend(FRONT_ROUTE, front=True) == FRONT_ROUTE
    with pytest.raises(ValueError, match="tolerance=inf must be finite"):
        check_route_options(tolerance=math.inf)
