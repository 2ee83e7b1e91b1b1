"""The MILP models of the exact routes (ε-constraint, max-min, Fisher-fair), as :class:`MilpSpec`.

Both models are written in *sum* units (sum_i x_i U_id rather than the mean) so that the
CP-SAT backend can scale every utility row by one factor; ε and δ (percentage points of a
mean) become K·ε and K·δ on the rows.

Each takes ``groups`` (a group number per client, see :func:`count_groups`): per-group integer
count columns n_g = Σ_{i ∈ g} x_i, branched on first (:meth:`MilpSpec.build`).
"""

from __future__ import annotations

import numpy as np

from selection.problem import SelectionProblem
from selection.solvers.milp.cpsat import round_data
from selection.solvers.milp.registry import integer_data
from selection.solvers.milp.spec import INF, MilpSpec

__all__ = [
    "model_data",
    "count_groups",
    "eps_spec",
    "maxmin_spec",
    "fisher_fair_spec",
    "top_k_sum",
]


def model_data(problem: SelectionProblem, backend: str, scale: int) -> dict[str, np.ndarray]:
    """The data a backend solves with: the true floats, or for CP-SAT rounded to 1/scale.

    U and U_d are the per-client values the problem's surrogate combines
    (:meth:`selection.surrogates.base.Surrogate.client_values`: the single-update utilities,
    or e.g. the soft vote's true-label probabilities)."""
    from selection.surrogates import Structure

    sur = problem.surrogate_model
    U, Ud = (
        sur.client_values(problem)
        if sur.structure in (Structure.LINEAR, Structure.LINEAR_FRACTIONAL)
        else (problem.U, problem.Ud)
    )
    data = {"U": U, "Ud": Ud, "F_z": problem.F_z, "B": problem.B}
    if integer_data(backend):
        data = {k: round_data(v, scale) for k, v in data.items()}
    return data


def count_groups(problem: SelectionProblem) -> np.ndarray | None:
    """The clients' own domains as group numbers, or None when counting them cannot help.

    None when every client is in one domain, or when the domains are so many that groups
    average fewer than two clients (a count column would be one binary again).
    """
    labels, g = np.unique(np.asarray(problem.client_domains, dtype=str), return_inverse=True)
    if len(labels) < 2 or len(labels) > problem.n / 2:
        return None
    return g.astype(np.int64)


def eps_spec(
    data: dict[str, np.ndarray],
    k: int,
    f_min: float | None,
    b_max: float | None,
    pairwise: bool = False,
    second_stage: bool = True,
    groups: np.ndarray | None = None,
    descent_step: float = 0.0,
) -> MilpSpec:
    """max sum U_i x_i, then min (hi - lo), s.t. sum x = K, lo <= sum_i U_id x_i <= hi ∀d.

    Without ``second_stage`` only max sum U_i x_i is solved (the complete sweep's mode: the
    next, tighter ε point finds a lower gap at the same U if there is one).

    Columns: x (N binaries), hi, lo (sum units). The row ``gap`` (hi - lo <= K·ε) starts free;
    optional rows ``fmin`` (sum F_z x >= F_min) and ``bmax`` (sum B x <= b). With
    ``pairwise`` the model also has the D·(D−1) rows ``pair<a>_<b>``:
    sum_i (U_ia − U_ib) x_i <= K·ε, pure-binary rows that carry ε instead of ``gap`` (the
    same feasible set; a backend takes them where its ``pairwise_eps`` says so: HiGHS).
    ``descent_step`` q > 0 (every U_id a whole multiple of q, so every hi − lo at a selection
    is one) lets the backend answer the second stage by gap descent on the row ``gap``
    (:meth:`.descent.GapDescent._descend`).
    """
    U, Ud = data["U"], data["Ud"]
    n, D = Ud.shape
    top = 100.0 * k
    z = np.zeros(n)
    rows = [("card", np.r_[np.ones(n), 0.0, 0.0], float(k), float(k))]
    rows += [(f"hi{d}", np.r_[Ud[:, d], -1.0, 0.0], -INF, 0.0) for d in range(D)]
    rows += [(f"lo{d}", np.r_[Ud[:, d], 0.0, -1.0], 0.0, INF) for d in range(D)]
    rows.append(("gap", np.r_[z, 1.0, -1.0], -INF, INF))
    if pairwise:
        rows += [
            (f"pair{a}_{b}", np.r_[Ud[:, a] - Ud[:, b], 0.0, 0.0], -INF, INF)
            for a in range(D)
            for b in range(D)
            if a != b
        ]
    if f_min is not None:
        rows.append(("fmin", np.r_[data["F_z"], 0.0, 0.0], float(f_min), INF))
    if b_max is not None:
        rows.append(("bmax", np.r_[data["B"], 0.0, 0.0], -INF, float(b_max)))
    objectives = [np.r_[U, 0.0, 0.0], np.r_[z, -1.0, 1.0]]
    values = [lambda x: float(x @ U), lambda x: -float(np.ptp(x @ Ud))]
    if not second_stage:
        objectives, values = objectives[:1], values[:1]
    spec = MilpSpec.build(n, k, [(0.0, top), (0.0, top)], rows, objectives, values, groups)
    spec.aux_of = lambda x: np.r_[np.max(x @ Ud), np.min(x @ Ud)]  # hi, lo at the selection
    if second_stage and descent_step > 0:
        spec.descent = ("gap", float(descent_step))
    return spec


def maxmin_spec(data: dict[str, np.ndarray], k: int, groups: np.ndarray | None = None) -> MilpSpec:
    """max t, then max sum U_i x_i, s.t. sum x = K, t <= sum_i U_id x_i ∀d, row ``floor`` free.

    Columns: x (N binaries), t (sum units). The row ``floor`` (sum U x >= K·(U* - δ)) is set
    per δ.
    """
    U, Ud = data["U"], data["Ud"]
    n, D = Ud.shape
    rows = [("card", np.r_[np.ones(n), 0.0], float(k), float(k))]
    rows += [(f"w{d}", np.r_[Ud[:, d], -1.0], 0.0, INF) for d in range(D)]
    rows.append(("floor", np.r_[U, 0.0], -INF, INF))
    objectives = [np.r_[np.zeros(n), 1.0], np.r_[U, 0.0]]
    values = [lambda x: float((x @ Ud).min()), lambda x: float(x @ U)]
    return MilpSpec.build(n, k, [(0.0, 100.0 * k)], rows, objectives, values, groups)


def fisher_fair_spec(
    data: dict[str, np.ndarray], k: int, groups: np.ndarray | None = None
) -> MilpSpec:
    """max sum F_z,i x_i, then max sum U_i x_i, s.t. sum x = K and the rows ``w<d>``
    (sum_i U_id x_i >= K·(worst* - δ), free until set per δ).

    Columns: x (N binaries) only.
    """
    U, Ud, Fz = data["U"], data["Ud"], data["F_z"]
    n, D = Ud.shape
    rows = [("card", np.ones(n), float(k), float(k))]
    rows += [(f"w{d}", Ud[:, d].astype(float), -INF, INF) for d in range(D)]
    objectives = [np.asarray(Fz, dtype=float), np.asarray(U, dtype=float)]
    values = [lambda x: float(x @ Fz), lambda x: float(x @ U)]
    return MilpSpec.build(n, k, [], rows, objectives, values, groups)


def top_k_sum(values: np.ndarray, k: int) -> float:
    """Sum of the k largest values (K·U* for the utilities)."""
    return float(np.sort(np.asarray(values))[::-1][:k].sum())
