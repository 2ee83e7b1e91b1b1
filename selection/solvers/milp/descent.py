"""The gap descent: the ε model's last stage asked as a sequence of feasibility questions.

:class:`GapDescent` is a mixin of :class:`.model.LexBackend`, whose stage loop calls
:meth:`GapDescent._descend` for the last stage where the backend ``descends`` and the spec
allows it (``MilpSpec.descent``); where the LP reduced-cost fixing runs, each question's own
LP (:meth:`GapDescent._question_lp`) may answer it or fix more binaries first. The race of a
question against a HiGHS twin is the CBC backend's (:meth:`.cbc.CbcBackend._optimize`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from selection.solvers.milp.answer import Answer
from selection.solvers.milp.fixing import best_bound, excluded, fixable, preferred
from selection.solvers.result import Status

__all__ = ["GapDescent", "DESCENT_STEPS"]

# yeses the gap descent of :meth:`GapDescent._descend` asks before solving the stage directly
DESCENT_STEPS = 8


class GapDescent:
    """The last stage by gap descent (a mixin: the methods are :class:`.model.LexBackend`'s)."""

    # True while :meth:`_descend` asks one of its questions (a backend may tune for a proof
    # of infeasibility, the usual answer)
    _asking = False

    def _descend(
        self, best: np.ndarray, time_limit: float | None, fixed: list[np.ndarray]
    ) -> Answer:
        """The last stage by *gap descent*: an :class:`Answer`, as :meth:`_optimize`'s.

        The last stage minimizes a row's value r (the ε model's gap hi − lo, never negative)
        among the selections that keep the earlier stages' values (their rows are fixed by
        then). Where every attainable r is a multiple of q (``spec.descent``), that is the same
        question as: is there a selection with r <= r(incumbent) − q/2 that keeps them? —
        asked with the *first* objective (max Σ U x under the earlier stages' rows, a
        feasibility question here), whose LP bound and reduced-cost fixing are sharp, where
        minimizing r directly leaves an LP that balances the domains with fractions of clients
        (a weak bound). Each yes lowers r and asks again; the first no proves the incumbent
        optimal for the stage (within ``abs_gap`` where a tolerance is set: the step is then
        the larger of q/2 and it, the row still half a grid step from any attainable r). After
        :data:`DESCENT_STEPS` yeses the stage is solved directly from the last incumbent.
        Columns the last stage's LP bound fixes on the way are appended to ``fixed`` (the
        caller restores them, also after an exception).
        """
        spec = self.spec
        name, q = spec.descent
        row = spec.row_index[name]
        lo0, up0 = self._row_lo[row], self._row_up[row]
        j_last = len(spec.objectives) - 1
        step = max(0.5 * q, self.abs_gap)
        cur, value = best, self._value(j_last, list(self._selection(best)), best)
        t0 = time.perf_counter()
        core = self._lp is not None

        def left() -> float | None:
            return None if time_limit is None else time_limit - (time.perf_counter() - t0)

        try:
            for _ in range(DESCENT_STEPS):
                r = -value  # the incumbent's row value, on the q grid
                target = min(q * (math.floor((r - step) / q + 1e-9) + 0.5), r - 0.5 * q)
                if target < max(lo0, 0.0):  # no smaller attainable value
                    return Answer(Status.OPTIMAL, cur, value)
                budget = left()
                if budget is not None and budget <= 0:
                    return Answer(Status.TIME_LIMIT, cur, value)
                self._bounds(row, lo0, min(up0, target))
                if core:  # the question's own LP may answer it, or fix more
                    no, cols = self._question_lp(budget)
                    fixed.append(cols)
                    if no:
                        return Answer(Status.OPTIMAL, cur, value)
                self._stage, self._asking = 0, True
                try:
                    out = Answer.of(self._optimize(spec.objectives[0], budget, None))
                finally:
                    self._stage, self._asking = j_last, False
                v = out.values
                if out.status == Status.INFEASIBLE:
                    return Answer(Status.OPTIMAL, cur, value)
                if out.status == Status.ERROR:
                    return Answer(Status.ERROR, None, math.nan, out.message)
                if v is None or len(self._selection(v)) != spec.k:
                    return Answer(Status.TIME_LIMIT, cur, value)
                cur, value = v, self._value(j_last, list(self._selection(v)), v)
                if out.status == Status.TIME_LIMIT:
                    return Answer(Status.TIME_LIMIT, cur, value)
                if core:  # a better value: the last stage's LP bound excludes more
                    fixed.append(self._refix(value))
        finally:
            self._bounds(row, lo0, up0)
        budget = left()
        if budget is not None and budget <= 0:
            return Answer(Status.TIME_LIMIT, cur, value)
        out = Answer.of(self._optimize(spec.objectives[-1], budget, cur))
        return out._replace(values=out.values if out.values is not None else cur)

    def _question_lp(self, time_limit: float | None) -> tuple[bool, np.ndarray]:
        """The LP relaxation of a gap-descent question (max U under the earlier stages' rows
        and the lowered gap row): (answered no, binaries fixed now).

        Any selection that answers yes has U >= the row ``obj0``'s lower bound ``need``. The
        LP's Lagrangian bound B (over the binaries' current bounds) answers no when
        B < need, and fixes every free binary whose flip lowers B below need (the lowered row
        makes this bound tighter than the stage's own LP, so it fixes more and leaves the
        question a smaller search). The fixings hold for every later question and the direct
        stage: the selections that matter there satisfy every lowered row asked.
        """
        spec = self.spec
        none = np.zeros(0, dtype=np.int64)
        c = spec.objectives[0]
        status, y = self._relax(c, time_limit)
        if status == Status.INFEASIBLE:
            return True, none
        if status != Status.OPTIMAL or y is None:
            return False, none
        need = float(self._row_lo[spec.row_index["obj0"]])
        bound, d = best_bound(spec, c, y, self._row_lo, self._row_up, (self._x_lo, self._x_up))
        if not (np.isfinite(bound) and np.isfinite(need)):
            return False, none
        if excluded(bound, d, spec.n_x, need):
            return True, none
        free = self._x_lo != self._x_up
        cols = np.flatnonzero(fixable(bound, d, spec.n_x, need, 0.0) & free)
        if len(cols):
            pref = preferred(d, spec.n_x)
            self._cols(cols, pref[cols], pref[cols])
        return False, cols
