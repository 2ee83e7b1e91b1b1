"""Run pyaugmecon on one selection instance; used by benchmarks/exact_peers.py.

Runs under ``.venv-peers/bin/python`` (``make peers-env``), never under the project's .venv:
pyaugmecon 1.0.8 pins numpy/pandas/Pyomo versions that clash with the project's. It imports
nothing from fedsel.

Usage: ``_pyaugmecon_runner.py INSTANCE.npz OUT.json --solver cbc|highs [--cbc-dir DIR]``.
(``highs``: appsi HiGHS; it hangs in pyaugmecon's forked worker on this machine, so ``cbc``
is the default.)
The instance holds integer arrays ``V`` (100·U_i, shape N), ``W`` (100·U_id, shape N×D) and
``k``. The model (integer-scaled, so an ε grid of step 1 reaches every attainable gap):

    max  Σ V_i x_i                          (= 100·K·U(S))
    max  lo − hi                            (= −100·K·gap(S))
    s.t. Σ x_i = K,  lo ≤ Σ W_id x_i ≤ hi for every domain d,  x binary.

The grid has one point per integer value of the gap objective between its payoff-table nadir
and its best value, so AUGMECON2's bypass (jump by ⌊slack/step⌋) can skip no attainable gap;
``--grid-points`` overrides it. The JSON answer: the Pareto points in (U %, gap pp), the
seconds of model building + ``solve()``, the grid size, and pyaugmecon's counters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import pyomo.environ as pyo
from pyaugmecon.pyaugmecon import PyAugmecon


def register_highs() -> str:
    """pyaugmecon calls ``SolverFactory(name, solver_io=..., manage_env=True)`` and expects an
    infeasible model to come back as a result (not an exception); appsi_highs refuses both, so
    a thin subclass drops the two keywords and loads a solution only when there is one."""
    base = pyo.SolverFactory._cls["appsi_highs"]

    class HighsForAugmecon(base):
        def __init__(self, solver_io=None, manage_env=None, **kw):
            super().__init__(**kw)

        def solve(self, model, **kw):
            kw["load_solutions"] = False
            res = super().solve(model, **kw)
            if res.solver.termination_condition == pyo.TerminationCondition.optimal:
                self.load_vars()
            return res

    pyo.SolverFactory.register("highs_augmecon", doc="appsi_highs for pyaugmecon")(HighsForAugmecon)
    return "highs_augmecon"


def build(V: np.ndarray, W: np.ndarray, k: int) -> pyo.ConcreteModel:
    n, d = W.shape
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, n - 1)
    m.D = pyo.RangeSet(0, d - 1)
    m.x = pyo.Var(m.I, within=pyo.Binary)
    m.hi = pyo.Var(within=pyo.Reals)
    m.lo = pyo.Var(within=pyo.Reals)
    m.card = pyo.Constraint(expr=sum(m.x[i] for i in m.I) == k)
    m.dom_hi = pyo.Constraint(
        m.D, rule=lambda m, j: sum(int(W[i, j]) * m.x[i] for i in m.I) <= m.hi
    )
    m.dom_lo = pyo.Constraint(
        m.D, rule=lambda m, j: sum(int(W[i, j]) * m.x[i] for i in m.I) >= m.lo
    )
    m.obj_list = pyo.ObjectiveList()
    m.obj_list.add(expr=sum(int(V[i]) * m.x[i] for i in m.I), sense=pyo.maximize)
    m.obj_list.add(expr=m.lo - m.hi, sense=pyo.maximize)
    for o in m.obj_list:
        m.obj_list[o].deactivate()
    return m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("instance")
    ap.add_argument("out")
    ap.add_argument("--solver", choices=["highs", "cbc"], default="cbc")
    ap.add_argument("--cbc-dir", default=None, help="folder holding a cbc executable")
    ap.add_argument("--grid-points", type=int, default=None)
    args = ap.parse_args()
    data = np.load(args.instance)
    V, W, k = data["V"], data["W"], int(data["k"])
    if args.solver == "highs":
        solver, io = register_highs(), "python"
    else:
        if args.cbc_dir:
            os.environ["PATH"] = args.cbc_dir + os.pathsep + os.environ["PATH"]
        solver, io = "cbc", "lp"
    work = tempfile.mkdtemp(prefix="pyaugmecon-")
    os.chdir(work)  # pyaugmecon writes its log folder and pickled model into the cwd
    t0 = time.perf_counter()
    # The grid needs the gap objective's range, which pyaugmecon finds in its payoff table;
    # an integer upper bound on that range (max minus min of any domain's K-sum) sizes a grid
    # of step exactly 1 once the nadir is known. pyaugmecon takes the number of grid points
    # up front, so the range is found by a first payoff-only pass (same solver, timed).
    if args.grid_points is None:
        probe = PyAugmecon(
            build(V, W, k),
            {
                "name": "probe",
                "grid_points": 2,
                "output_excel": False,
                "cpu_count": 1,
                "logging_folder": "logs",
                "solver_name": solver,
                "solver_io": io,
                "pickle_file": os.path.join(work, "probe.p"),
            },  # fmt: skip
            {"MIPGap": None, "NonConvex": None},
        )
        probe.model.min_to_max()
        probe.model.construct_payoff()
        probe.model.find_obj_range()
        gp = int(round(probe.model.obj_range[0])) + 1
    else:
        gp = args.grid_points
    model = build(V, W, k)
    opts = {
        "name": "fedsel-peer",
        "grid_points": gp,
        "output_excel": False,
        "cpu_count": 1,
        "logging_folder": "logs",
        "solver_name": solver,
        "solver_io": io,
        "pickle_file": os.path.join(work, "model.p"),
    }
    aug = PyAugmecon(model, opts, {"MIPGap": None, "NonConvex": None})
    aug.solve()
    seconds = time.perf_counter() - t0
    scale = 100.0 * k
    pts = sorted(
        ((float(u) / scale, -float(g) / scale) for u, g in aug.get_pareto_solutions()),
        key=lambda p: (-p[0], p[1]),
    )
    out = {
        "points": pts,
        "seconds": seconds,
        "grid_points": gp,
        "models_solved": int(aug.model.models_solved.value()),
        "infeasibilities": int(aug.model.infeasibilities.value()),
        "solver": solver,
    }
    with open(args.out, "w") as fh:
        json.dump(out, fh)
    print(json.dumps({k_: v for k_, v in out.items() if k_ != "points"}), file=sys.stderr)


if __name__ == "__main__":
    main()
