"""A formulation from outside fedsel: top-K by U − δ·B, swept over δ.

Importing this module registers it (``@register``); the package's entry point in the
``fedsel.formulations`` group names the module, so fedsel imports it when it reads its
registry.
"""

from typing import ClassVar

import numpy as np

from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult, Status


@register
class ToyTop(Solver):
    """Top-K by U_i − delta · B_i."""

    name: ClassVar[str] = "toy-top"
    summary: ClassVar[str] = "top-K by U − δ·B (a plugin)"
    param: ClassVar[str] = "delta"
    default_grid: ClassVar[tuple] = (0.0, 50.0)
    spec_form: ClassVar[str] = "toy-top:D"

    def __init__(self, *, delta: float = 0.0) -> None:
        self.delta = check_nonneg("delta", delta, allow_none=False)

    def _solve(self, problem: SelectionProblem) -> RawResult:
        score = problem.U - self.delta * problem.B
        idx = np.argsort(-score, kind="stable")[: problem.k]
        return RawResult(
            tuple(int(i) for i in idx), Status.OPTIMAL, param=fmt_param("delta", self.delta)
        )
