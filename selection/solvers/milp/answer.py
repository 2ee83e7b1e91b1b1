"""What one search of a backend answers: :class:`Answer`, in the one status vocabulary.

Each built-in backend maps its native codes (HiGHS model statuses, CBC's solution statuses,
CP-SAT's and SCIP's) onto :class:`~selection.solvers.result.Status` inside its ``_optimize``;
the stage loop (:class:`.model.LexBackend`), the gap descent (:mod:`.descent`), the Dinkelbach
stages (:mod:`.fractional`) and the bounded smallest-gap route read the status, never a
backend's text. A backend written to the documented contract (``docs/how-to/backend.md``: a
triple whose first item is ``optimal``, ``infeasible``, ``limit`` or ``error:<text>``) is read
through :meth:`Answer.of`, the one place those words are mapped.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from selection.solvers.result import Status

__all__ = ["Answer"]


class Answer(NamedTuple):
    """One ``max c·v`` of a backend (:meth:`.model.LexBackend._optimize`).

    Attributes:
        status: ``OPTIMAL`` (within the stage's stopping gap), ``INFEASIBLE`` (no column
            vector satisfies the rows), ``TIME_LIMIT`` (stopped by the time, node or solution
            limit, or interrupted: ``values`` is the incumbent or None) or ``ERROR``.
        values: the full column vector, or None.
        value: its objective value (NaN without one).
        message: the backend's own words where the status is ``ERROR`` ("" otherwise).

    Examples:
        >>> import numpy as np
        >>> from selection.solvers.milp.answer import Answer
        >>> from selection.solvers.milp.model import MilpSpec, make_backend
        >>> U = np.array([3.0, 1.0, 2.0])  # max U·x over x in {0, 1}^3 with x0 + x1 + x2 = 2
        >>> spec = MilpSpec.build(3, 2, [], [("card", np.ones(3), 2.0, 2.0)], [U])
        >>> out = make_backend("highs", spec)._optimize(U, None, None)
        >>> isinstance(out, Answer), str(out.status), (out.values[:3] > 0.5).tolist(), out.value
        (True, 'optimal', [True, False, True], 5.0)
    """

    status: Status
    values: np.ndarray | None
    value: float
    message: str = ""

    @classmethod
    def of(cls, returned: Answer | tuple) -> Answer:
        """What a backend's ``_optimize`` returned, as an :class:`Answer`: its own, or the
        (word, values, value) triple of the documented contract, the word one of ``optimal``,
        ``infeasible``, ``limit`` (stopped: ``TIME_LIMIT``), ``error:<text>`` (the text is the
        message) or a :class:`Status` value; any other word is an ``ERROR`` that names it.

        Examples:
            >>> from selection.solvers.milp.answer import Answer
            >>> out = Answer.of(("limit", None, float("nan")))
            >>> str(out.status), out.values
            ('time_limit', None)
            >>> Answer.of(("error:out of memory", None, 0.0))[::3]
            (<Status.ERROR: 'error'>, 'out of memory')
        """
        if isinstance(returned, Answer):
            return returned
        kind, values, value = returned
        word, _, text = str(kind).partition(":")
        status = _WORDS.get(word)
        if status is None:
            return cls(Status.ERROR, None, value, f"the backend answered {str(kind)!r}")
        return cls(status, values, value, text)


#: the first item of a backend's (word, values, value) triple, as :meth:`Answer.of` reads it
_WORDS: dict[str, Status] = {**{s.value: s for s in Status}, "limit": Status.TIME_LIMIT}
