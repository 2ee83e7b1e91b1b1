"""The backend-neutral lexicographic MILP over the selection vector: :class:`MilpSpec`.

The ε-constraint and max-min formulations are both "binary x (N) plus a few continuous
auxiliary columns, a handful of dense rows, two objectives maximized lexicographically".
:class:`MilpSpec` holds such a model as arrays (CSR matrix, bounds); a backend
(:mod:`.highs`, :mod:`.cbc`, :mod:`.cpsat`) builds it once and then only
changes row bounds between sweep points (one persistent model per problem). The stage loop
that solves it is :class:`.model.LexBackend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["MilpSpec", "INF"]

INF = float("inf")


@dataclass
class MilpSpec:
    """A maximization MILP whose first ``n_x`` columns are the binary selection vector.

    Attributes:
        n_x: number of binary columns (the clients), N.
        k: cardinality K (the row ``card`` fixes sum(x) = K).
        col_lo, col_up: column bounds, shape (n_col,).
        A: constraint matrix, CSR, shape (n_row, n_col).
        row_lo, row_up: row bounds (±inf allowed), shape (n_row,).
        row_index: row name -> row position.
        objectives: lexicographic objectives to maximize, each shape (n_col,).
        stage_values: per objective, the exact value the selection x (0/1, shape (N,))
            attains (the best over the auxiliary columns); the next stage's bound and the
            reduced-cost fixing take it, not the backend's rounded solution report.
        integer: per column, whether it is integer (the binaries and any count columns).
        priority: per column, its branching priority (higher first; 0 = the backend's own
            choice). Backends that take priorities (CBC, SCIP, CP-SAT) use them.
        n_counts: number of per-group count columns (the last ``n_counts`` columns).
        quanta: per objective, q_j > 0 when the objective's value at every selection is a
            whole multiple of q_j (sum units; 2-decimal data: 0.01), else 0. A stage then
            stops once the backend's bound is within 0.49·q_j of its incumbent: no selection's
            value lies between them, so the incumbent is proven optimal
            (:meth:`.model.LexBackend.stop_gap`).
        descent: (row name, q) when the second stage's objective is minus that row's value
            and every value the row takes at a selection is a whole multiple of q (sum units,
            q > 0): the second stage may then be answered by :meth:`.model.LexBackend.solve`'s
            *gap descent* (:meth:`.descent.GapDescent._descend`). None: the stage is solved as
            it stands.
        aux_of: the auxiliary columns (those between the binaries and the count columns) a
            selection x (0/1, shape (N,)) takes at its best, for a starting solution
            (:meth:`start_columns`); None: the model takes no start.
    """

    n_x: int
    k: int
    col_lo: np.ndarray
    col_up: np.ndarray
    A: sp.csr_matrix
    row_lo: np.ndarray
    row_up: np.ndarray
    row_index: dict[str, int]
    objectives: list[np.ndarray]
    stage_values: list[Callable[[np.ndarray], float]] = field(default_factory=list)
    integer: np.ndarray | None = None
    priority: np.ndarray | None = None
    n_counts: int = 0
    descent: tuple[str, float] | None = None
    quanta: list[float] = field(default_factory=list)
    aux_of: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        n = self.n_col
        if self.integer is None:
            self.integer = np.arange(n) < self.n_x
        if self.priority is None:
            self.priority = np.zeros(n, dtype=np.int64)

    @property
    def n_col(self) -> int:
        return int(self.col_lo.shape[0])

    @property
    def count_cols(self) -> np.ndarray:
        """Positions of the per-group count columns (empty without groups)."""
        return np.arange(self.n_col - self.n_counts, self.n_col)

    def start_columns(
        self,
        selected,
        row_lo: np.ndarray,
        row_up: np.ndarray,
        x_lo: np.ndarray,
        x_up: np.ndarray,
    ) -> np.ndarray | None:
        """The full column vector of the selection ``selected`` (indices), a starting
        solution for a backend, or None where the model takes no start (no ``aux_of``), the
        selection is not K distinct binaries, or it breaks a row or column bound under the
        given bounds (1e-9 of slack, the backends' own feasibility tolerance).

        Examples:
            >>> import numpy as np
            >>> from selection.solvers.milp.formulations import eps_spec
            >>> Ud = np.array([[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]])
            >>> spec = eps_spec({"U": Ud.mean(1), "Ud": Ud}, 2, None, None)
            >>> free = (spec.row_lo, spec.row_up, spec.col_lo[:3], spec.col_up[:3])
            >>> spec.start_columns((1, 2), *free).tolist()  # x, then hi and lo (sum units)
            [0.0, 1.0, 1.0, 5.0, 3.0]
            >>> spec.start_columns((0,), *free) is None  # not K clients
            True
        """
        sel = np.unique(np.asarray(selected, dtype=np.int64))
        if self.aux_of is None or len(sel) != self.k or len(sel) != len(selected):
            return None
        if sel[0] < 0 or sel[-1] >= self.n_x:
            return None
        x = np.zeros(self.n_x)
        x[sel] = 1.0
        v = np.zeros(self.n_col)
        v[: self.n_x] = x
        aux = np.asarray(self.aux_of(x), dtype=float)
        v[self.n_x : self.n_col - self.n_counts] = aux
        for j, col in enumerate(self.count_cols):  # n_g: the binaries of row cnt<g>
            row = self.A.getrow(self.row_index[f"cnt{j}"])
            on = row.indices < self.n_x
            v[col] = float(row.data[on] @ x[row.indices[on]])
        lo = np.r_[x_lo, self.col_lo[self.n_x :]]
        up = np.r_[x_up, self.col_up[self.n_x :]]
        act = self.A @ v

        def slack(b: np.ndarray) -> np.ndarray:
            return 1e-9 * (1.0 + np.abs(np.where(np.isfinite(b), b, 0.0)))

        inside = np.all(act >= row_lo - slack(row_lo)) and np.all(act <= row_up + slack(row_up))
        return v if inside and np.all(v >= lo - slack(lo)) and np.all(v <= up + slack(up)) else None

    @classmethod
    def build(
        cls,
        n_x: int,
        k: int,
        aux_bounds: list[tuple[float, float]],
        rows: list[tuple[str, np.ndarray, float, float]],
        objectives: list[np.ndarray],
        stage_values: list[Callable[[np.ndarray], float]] | None = None,
        groups: np.ndarray | None = None,
    ) -> MilpSpec:
        """Assemble a spec from dense rows (one numpy row per constraint; N·D entries at most).

        Every objective but the last also becomes a row ``obj<j>`` (free until fixed).

        ``groups`` (shape (N,), a group number per binary; None = none) adds, per group g,
        an integer count column n_g in [0, min(K, |g|)] with the row ``cnt<g>``:
        Σ_{i ∈ g} x_i − n_g = 0, branched on before the binaries (priority 1). The feasible
        set is unchanged; what changes is the search: the LP relaxation of the balance rows
        spreads fractional numbers of clients over the groups, and a branch on n_g cuts
        that slack where a branch on one x_i barely moves the bound.
        """
        n_col = n_x + len(aux_bounds)
        rows = list(rows) + [(f"obj{j}", c, -INF, INF) for j, c in enumerate(objectives[:-1])]
        dense = np.vstack([r[1] for r in rows]) if rows else np.zeros((0, n_col))
        if dense.shape[1] != n_col:
            raise ValueError(f"rows have {dense.shape[1]} columns, the model has {n_col}")
        lo = np.array([0.0] * n_x + [b[0] for b in aux_bounds])
        up = np.array([1.0] * n_x + [b[1] for b in aux_bounds])
        objectives = [np.asarray(c, dtype=float) for c in objectives]
        n_counts = 0
        if groups is not None:
            g = np.asarray(groups, dtype=np.int64)
            labels = np.unique(g)
            n_counts = len(labels)
            dense = np.hstack([dense, np.zeros((dense.shape[0], n_counts))])
            objectives = [np.r_[c, np.zeros(n_counts)] for c in objectives]
            cnt = np.zeros((n_counts, n_col + n_counts))
            for j, lab in enumerate(labels):
                members = g == lab
                cnt[j, :n_x] = members
                cnt[j, n_col + j] = -1.0
                lo = np.r_[lo, 0.0]
                up = np.r_[up, float(min(k, int(members.sum())))]
            rows += [(f"cnt{j}", cnt[j], 0.0, 0.0) for j in range(n_counts)]
            dense = np.vstack([dense, cnt])
        n_all = n_col + n_counts
        integer = np.arange(n_all) < n_x
        integer[n_col:] = True
        priority = np.zeros(n_all, dtype=np.int64)
        priority[n_col:] = 1
        return cls(
            n_x=n_x,
            k=k,
            col_lo=lo,
            col_up=up,
            A=sp.csr_matrix(dense),
            row_lo=np.array([r[2] for r in rows], dtype=float),
            row_up=np.array([r[3] for r in rows], dtype=float),
            row_index={r[0]: i for i, r in enumerate(rows)},
            objectives=objectives,
            stage_values=list(stage_values or []),
            integer=integer,
            priority=priority,
            n_counts=n_counts,
        )
