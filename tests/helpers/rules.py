"""One round of a baseline rule's own kind: sizes and what the rule reads, nothing else.

Imported as ``helpers.rules`` (``from helpers.rules import rule_problem``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from selection.problem import SelectionProblem


def rule_problem(n_samples, k: int, *, loss=None, vectors=None) -> SelectionProblem:
    """Clients ``c0, c1, ...`` alternating between domains ``a`` and ``b``, with the given
    sizes, optionally their reported ``loss`` and their update ``vectors`` (rows in order)."""
    n = len(n_samples)
    table = pd.DataFrame(
        {
            "round": 0,
            "client_id": [f"c{i}" for i in range(n)],
            "domain": ["a", "b"] * (n // 2) + ["a"] * (n % 2),
            "n_samples": np.asarray(n_samples, dtype=np.int64),
            **({} if loss is None else {"loss": np.asarray(loss, dtype=float)}),
        }
    )
    problem = SelectionProblem.from_clients(table, k, ("a", "b"))
    return problem if vectors is None else problem.with_vectors(table["client_id"], vectors)
