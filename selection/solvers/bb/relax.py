"""The LP relaxation of one plane in HiGHS: one persistent model, warm-started throughout.

Columns x_i in [0, 1] (fixed to 0 or 1 by the search), Σ x = K, and the plane's rows:

* ``gap``: hi, lo free; S_d − hi <= 0, S_d − lo >= 0 for every domain d; hi − lo <= t;
* ``worst``: S_d >= −t for every domain d.

Only bounds change between solves (the threshold t, the fixings), so HiGHS restarts every
solve from the last optimal basis. A solve returns the direction c (the duals of the domain
rows, projected onto the plane's cone, the sign the one with the smaller bound) that the
search turns into Lagrangian bounds (:mod:`.planes`).
"""

from __future__ import annotations

import numpy as np

from selection.solvers.bb.planes import Plane

__all__ = ["Relaxation"]


class Relaxation:
    """max U·x s.t. Σ x = K, g(S) <= t, 0 <= x <= 1 (some x fixed), in HiGHS.

    Args:
        U: per-client utility (sum units per client), shape (N,).
        Ud: per-client domain utilities, shape (N, D).
        k: the cardinality K.
        plane: the plane (:data:`.planes.PLANES`).
    """

    def __init__(self, U: np.ndarray, Ud: np.ndarray, k: int, plane: Plane) -> None:
        import highspy

        from selection.solvers.milp.highs import new_highs

        self.U, self.Ud, self.k, self.plane = U, Ud, k, plane
        n, d = Ud.shape
        self.n, self.d = n, d
        inf = highspy.kHighsInf
        self._hs = highspy
        h = new_highs()
        h.setOptionValue("threads", 1)
        h.setOptionValue("presolve", "off")  # bound changes only: warm starts do the work
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        h.setOptionValue("dual_feasibility_tolerance", 1e-9)
        extra = 2 if plane.name == "gap" else 0  # hi, lo
        ncol = n + extra
        lo = np.r_[np.zeros(n), np.full(extra, -inf)]
        up = np.r_[np.ones(n), np.full(extra, inf)]
        empty = np.zeros(0, dtype=np.int32)
        h.addCols(ncol, np.r_[U, np.zeros(extra)], lo, up, 0, empty, empty, np.zeros(0))
        rows = [(np.ones(n), {}, float(k), float(k))]  # (x coefficients, {extra col: coef})
        if plane.name == "gap":
            rows += [(Ud[:, j], {n: -1.0}, -inf, 0.0) for j in range(d)]
            rows += [(Ud[:, j], {n + 1: -1.0}, 0.0, inf) for j in range(d)]
            rows += [(np.zeros(n), {n: 1.0, n + 1: -1.0}, -inf, inf)]
            self._t_row = 1 + 2 * d
            self._dom_rows = [np.arange(1, 1 + d), np.arange(1 + d, 1 + 2 * d)]
        else:
            rows += [(Ud[:, j], {}, -inf, inf) for j in range(d)]
            self._t_row = -1
            self._dom_rows = [np.arange(1, 1 + d)]
        starts, idx, val = [], [], []
        for coef, ext, _, _ in rows:
            nz = np.flatnonzero(coef)
            starts.append(len(idx))
            idx += nz.tolist() + list(ext)
            val += coef[nz].tolist() + list(ext.values())
        h.addRows(
            len(rows),
            np.array([r[2] for r in rows], dtype=float),
            np.array([r[3] for r in rows], dtype=float),
            len(idx),
            np.array(starts, dtype=np.int32),
            np.array(idx, dtype=np.int32),
            np.array(val, dtype=float),
        )
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self._rows = rows
        self._h = h
        self._cols = np.arange(n, dtype=np.int32)
        self._t: float | None = None
        self.solves = 0

    def set_threshold(self, t: float) -> None:
        """g(S) <= t on the model's rows (t = inf: no such row)."""
        if t == self._t:
            return
        inf = self._hs.kHighsInf
        tt = inf if not np.isfinite(t) else float(t)
        if self.plane.name == "gap":
            self._h.changeRowBounds(self._t_row, -inf, tt)
        else:
            for r in self._dom_rows[0]:
                self._h.changeRowBounds(int(r), -tt if tt < inf else -inf, inf)
        self._t = t

    def solve(self, lo: np.ndarray, up: np.ndarray) -> tuple[float, np.ndarray] | None:
        """The LP at the current threshold with column bounds [lo, up], shape (N,) each.

        Returns:
            (LP value, the direction c of its duals, shape (D,), not yet signed), or None
            when the LP is infeasible (then no selection within the bounds has g <= t).
        """
        h = self._h
        h.changeColsBounds(self.n, self._cols, lo, up)
        h.run()
        self.solves += 1
        st = h.getModelStatus()
        M = self._hs.HighsModelStatus
        if st == M.kInfeasible:
            return None
        if st != M.kOptimal:  # anything else: no direction; the caller uses its fallback
            return float("inf"), np.zeros(self.d)
        y = np.asarray(h.getSolution().row_dual, dtype=float)
        c = sum(y[r] for r in self._dom_rows)
        return float(h.getInfo().objective_function_value), np.asarray(c, dtype=float)

    def mip(
        self, t: float, floor: float, time_limit: float | None, abs_gap: float = 0.0
    ) -> np.ndarray | None | bool:
        """max U·x s.t. Σ x = K, g(S) <= t, U·x >= ``floor``, x binary: a fresh HiGHS MIP
        (cuts, its own search) for a box whose tree grew past the search's budget; with
        ``abs_gap`` (sum units) a selection within it of the max is enough.

        Returns:
            The 0/1 selection vector, shape (N,); None when proven infeasible; False when
            stopped by ``time_limit`` before either.
        """
        hs = self._hs
        from selection.solvers.milp.highs import new_highs

        self.set_threshold(t)  # the copied LP carries g(S) <= t, whatever box came before

        h = new_highs()
        h.setOptionValue("threads", 1)
        h.setOptionValue("mip_rel_gap", 0.0)
        # HiGHS stops at its own gap <= abs_gap: a hair less keeps the answer within it
        h.setOptionValue("mip_abs_gap", max(1e-9, 0.999 * float(abs_gap)))
        h.setOptionValue("mip_feasibility_tolerance", 1e-9)
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        if time_limit is not None:
            h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
        lp = self._h.getLp()
        h.passModel(lp)
        h.changeColsBounds(self.n, self._cols, np.zeros(self.n), np.ones(self.n))
        idx = self._cols
        h.changeColsIntegrality(
            self.n, idx, np.full(self.n, int(hs.HighsVarType.kInteger), dtype=np.uint8)
        )
        inf = hs.kHighsInf
        nz = np.flatnonzero(self.U).astype(np.int32)
        lo = float(floor) if np.isfinite(floor) else -inf
        h.addRow(lo, inf, len(nz), nz, self.U[nz].astype(float))
        h.run()
        st = h.getModelStatus()
        M = hs.HighsModelStatus
        if st == M.kInfeasible:
            return None
        if st != M.kOptimal:
            return False
        return np.asarray(h.getSolution().col_value[: self.n], dtype=float)
