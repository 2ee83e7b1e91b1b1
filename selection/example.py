"""The example round the package ships: 20 clients of the four Digits-4 domains, 3 rounds.

``fedsel example -o stats.csv`` writes it; :func:`example_stats` reads it in Python, from
any folder and from an installed wheel alike. :func:`small_round` and :func:`tied_round` are
two rounds of three clients whose answers a reader checks by eye: the docstring examples of
the objectives, the reports and the solvers run on them.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported where the table is read, not with the CLI's listing
    import pandas as pd

    from selection.problem import SelectionProblem

__all__ = [
    "EXAMPLE_STATS",
    "example_stats",
    "example_stats_bytes",
    "small_round",
    "tied_round",
    "small_problem",
    "tied_problem",
]

EXAMPLE_STATS = ("data", "example_stats.csv")  # inside the selection package


def example_stats_bytes() -> bytes:
    """The example round-stats table as the package holds it (CSV bytes).

    Examples:
        >>> from selection.example import example_stats_bytes
        >>> lines = example_stats_bytes().decode().splitlines()
        >>> len(lines), lines[0]  # a header and 20 clients x 3 rounds
        (61, 'round,client_id,domain,n_samples,U,F,B,cos_g,loss,U_mnist,U_usps,U_svhn,U_syn')
    """
    from importlib.resources import files

    resource = files("selection")
    for part in EXAMPLE_STATS:
        resource = resource.joinpath(part)
    return resource.read_bytes()


def example_stats() -> pd.DataFrame:
    """The example round-stats table, validated as :func:`selection.schema.read_stats` reads a
    file.

    Examples:
        >>> from selection.example import example_stats
        >>> stats = example_stats()
        >>> stats["client_id"].nunique(), sorted(stats["round"].unique().tolist())
        (20, [0, 1, 2])
    """
    from selection.schema import read_stats_csv

    return read_stats_csv(io.BytesIO(example_stats_bytes()))


def small_round() -> pd.DataFrame:
    """Three clients, two domains, one round: ``a`` and ``b`` in domain ``x``, ``c`` in ``y``;
    U = 90, 80, 60; U_x = 90, 80, 50; U_y = 60, 60, 80; F = 1, 2, 4; B = 0.1, 0.2, 0.3;
    cos_g = 0.5, 0.3, −0.1; 100 samples each. At K = 2, {a, b} has U_d(S) = (85, 60) and
    {a, c} (70, 70).

    Examples:
        >>> from selection.example import small_round
        >>> small_round()[["client_id", "domain", "U", "U_x", "U_y"]].values.tolist()
        [['a', 'x', 90, 90, 60], ['b', 'x', 80, 80, 60], ['c', 'y', 60, 50, 80]]
    """
    import pandas as pd

    return pd.DataFrame({"round": 0, "client_id": ["a", "b", "c"],
        "domain": ["x", "x", "y"], "n_samples": 100, "U": [90, 80, 60],
        "U_x": [90, 80, 50], "U_y": [60, 60, 80], "F": [1, 2, 4],
        "B": [0.1, 0.2, 0.3], "cos_g": [0.5, 0.3, -0.1]})  # fmt: skip


def tied_round() -> pd.DataFrame:
    """Three clients, two domains, one round with a tie: ``a0`` and ``a1`` in domain ``a``,
    ``b0`` in ``b``; U = 70, 70, 75; U_a = 90, 50, 80; U_b = 50, 90, 70; F = 1, 2, 4; B = 0.1;
    cos_g = 0.5; 100 samples each. At K = 2, {a0, a1} and {b0, a1} tie at U = 72.5 (gaps 25
    and 15) and {a0, b0} has U = 70, gap 0.

    Examples:
        >>> from selection.example import tied_round
        >>> tied_round()[["client_id", "domain", "U", "U_a", "U_b"]].values.tolist()
        [['a0', 'a', 70.0, 90.0, 50.0], ['b0', 'b', 70.0, 50.0, 90.0], ['a1', 'a', 75.0, 80.0, 70.0]]
    """
    import pandas as pd

    return pd.DataFrame({"round": 0, "client_id": ["a0", "b0", "a1"],
        "domain": ["a", "b", "a"], "n_samples": 100, "U": [70.0, 70.0, 75.0],
        "U_a": [90.0, 50.0, 80.0], "U_b": [50.0, 90.0, 70.0],
        "F": [1.0, 2.0, 4.0], "B": 0.1, "cos_g": 0.5})  # fmt: skip


def small_problem(k: int = 2) -> SelectionProblem:
    """:func:`small_round` as the problem of choosing ``k`` of its three clients.

    Examples:
        >>> from selection.example import small_problem
        >>> problem = small_problem()
        >>> problem.ids.tolist(), problem.k, problem.domains
        (['a', 'b', 'c'], 2, ('x', 'y'))
    """
    from selection.problem import SelectionProblem

    return SelectionProblem.from_stats(small_round(), k=k)


def tied_problem(k: int = 2) -> SelectionProblem:
    """:func:`tied_round` as the problem of choosing ``k`` of its three clients.

    Examples:
        >>> from selection.example import tied_problem
        >>> problem = tied_problem()
        >>> problem.ids.tolist(), problem.k, problem.domains
        (['a0', 'b0', 'a1'], 2, ('a', 'b'))
    """
    from selection.problem import SelectionProblem

    return SelectionProblem.from_stats(tied_round(), k=k)
