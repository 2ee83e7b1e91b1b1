"""One round's cardinality-constrained selection problem.

A :class:`SelectionProblem` holds the arrays every solver needs (utilities, per-domain
utilities, Fisher z-scores, label divergences, cosines) for the N clients of one round,
plus the cardinality K. Build it with :meth:`SelectionProblem.from_stats`.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError
from selection.logits import ValidationLogits
from selection.schema import domain_columns, read_stats, validate_stats
from selection.surrogates.base import Structure, Surrogate

__all__ = ["SelectionProblem"]

# problem -> its linear view (SelectionProblem.linear_view); problems hash by identity
_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class SelectionProblem:
    """Choose exactly ``k`` of ``n`` clients of one round.

    Attributes:
        ids: client ids, shape (N,).
        client_domains: each client's own domain, shape (N,).
        domains: names of the D evaluation domains (from the ``U_<domain>`` columns).
        U: pooled update utility, accuracy %, shape (N,).
        Ud: per-domain update utility, accuracy %, shape (N, D).
        F: empirical Fisher trace, shape (N,).
        F_z: z-score of log F within the round, shape (N,).
        B: JS divergence of the label distribution, nats, shape (N,).
        cos_g: cosine of the update with the mean update, shape (N,).
        n_samples: client training-set sizes, shape (N,).
        k: cardinality K.
        round: the round the statistics were taken at.
        surrogate: name of the surrogate of U(S), U_d(S) every objective reads
            (:mod:`selection.surrogates`; default ``mean``, the problem statement's definition).
        logits: the round's validation logits, rows in ``ids`` order (None if not given;
            the ``ensemble`` surrogate needs them).
        vectors: the clients' update vectors, shape (N, P), rows in ``ids`` order, NaN rows
            for clients without one (None if not given; the rules reading updates need them:
            ``divfl``, ``clustered:2``). :meth:`with_vectors` attaches them.

    Examples:
        >>> import pandas as pd
        >>> from selection.problem import SelectionProblem
        >>> stats = pd.DataFrame({"round": 0, "client_id": ["a0", "b0", "a1"],
        ...     "domain": ["a", "b", "a"], "n_samples": 100, "U": [70.0, 70.0, 75.0],
        ...     "U_a": [90.0, 50.0, 80.0], "U_b": [50.0, 90.0, 70.0],
        ...     "F": [1.0, 2.0, 4.0], "B": 0.1, "cos_g": 0.5})
        >>> problem = SelectionProblem.from_stats(stats, k=2)
        >>> problem.n, problem.k, problem.domains, problem.ids_of([2, 0])
        (3, 2, ('a', 'b'), ['a0', 'a1'])
        >>> problem.Ud[:, 1], problem.F_z.round(3)  # U_b per client; z-score of log F
        (array([50., 90., 70.]), array([-1.225,  0.   ,  1.225]))
    """

    ids: np.ndarray
    client_domains: np.ndarray
    domains: tuple[str, ...]
    U: np.ndarray
    Ud: np.ndarray
    F: np.ndarray
    F_z: np.ndarray
    B: np.ndarray
    cos_g: np.ndarray
    n_samples: np.ndarray
    k: int
    round: int
    table: pd.DataFrame | None = field(default=None, repr=False)
    surrogate: str = DEFAULT_SURROGATE
    logits: ValidationLogits | None = field(default=None, repr=False)
    vectors: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: the registered surrogate object ``surrogate`` names (set at construction)
    surrogate_model: Surrogate = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from selection.surrogates import SurrogateSpec

        judged = SurrogateSpec(self.surrogate)  # a spec's parsed surrogate: no second look-up
        sur = judged.model
        # the problem holds its surrogate object (the name stays the field: it compares and
        # prints); set once here, read by every route
        object.__setattr__(self, "surrogate", judged)
        object.__setattr__(self, "surrogate_model", sur)
        if sur.needs_logits and self.logits is None:
            raise SelectionError(
                f"the {self.surrogate} surrogate needs the round's validation logits "
                "(fedsel oracle writes them to the run's logits/ folder; pass --logits)"
            )

    @property
    def n(self) -> int:
        return int(self.U.shape[0])

    @property
    def d(self) -> int:
        return len(self.domains)

    @classmethod
    def from_stats(
        cls,
        stats: pd.DataFrame | str | os.PathLike,
        k: int,
        round: int | None = None,  # noqa: A002 - the maths calls it the round
        *,
        surrogate: str = DEFAULT_SURROGATE,
        logits: ValidationLogits | None = None,
    ) -> SelectionProblem:
        """Build the problem of one round.

        Args:
            stats: a round-stats DataFrame or a path to a CSV/Parquet file.
            k: number of clients to select, 1 <= k <= N.
            round: round to take; default the last round in the table.
            surrogate: the surrogate of U(S), U_d(S) (``mean``, ``weighted``, ``ensemble``).
            logits: the round's validation logits (any client order; the problem's clients
                must all have a row).

        Raises:
            StatsError: the table violates the contract.
            SelectionError: k or round is invalid.

        Examples:
            >>> from selection.example import example_stats
            >>> from selection.problem import SelectionProblem
            >>> problem = SelectionProblem.from_stats(example_stats(), k=5)  # the last round
            >>> problem.n, problem.k, problem.domains
            (20, 5, ('mnist', 'usps', 'svhn', 'syn'))
        """
        df = validate_stats(stats) if isinstance(stats, pd.DataFrame) else read_stats(stats)
        rounds = sorted(int(r) for r in df["round"].unique())
        r = rounds[-1] if round is None else int(round)
        if r not in rounds:
            raise SelectionError(
                f"round {r} is not in the stats table (rounds {rounds[0]}..{rounds[-1]})"
            )
        part = df[df["round"] == r].reset_index(drop=True)
        n = len(part)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise SelectionError(f"k must be an integer, got {k!r}")
        if k <= 0:
            raise SelectionError(f"k={k} must be at least 1")
        if k > n:
            raise SelectionError(f"k={k} exceeds the {n} clients of round {r}")
        dcols = domain_columns(df)  # the domains of the whole table, whatever the round
        ids = part["client_id"].to_numpy(dtype=str)
        domains = tuple(c[2:] for c in dcols)
        if logits is not None:
            logits = logits.for_clients(ids.tolist(), domains)
        F = part["F"].to_numpy(dtype=float)
        logF = np.log(F)
        sd = logF.std()
        F_z = (logF - logF.mean()) / sd if sd > 0 else np.zeros(n)
        return cls(
            ids=ids,
            client_domains=part["domain"].to_numpy(dtype=str),
            domains=domains,
            U=part["U"].to_numpy(dtype=float),
            Ud=part[dcols].to_numpy(dtype=float),
            F=F,
            F_z=F_z,
            B=part["B"].to_numpy(dtype=float),
            cos_g=part["cos_g"].to_numpy(dtype=float),
            n_samples=part["n_samples"].to_numpy(dtype=np.int64),
            k=int(k),
            round=r,
            table=part,
            surrogate=surrogate,
            logits=logits,
        )

    @classmethod
    def from_clients(
        cls,
        table: pd.DataFrame,
        k: int,
        domains: Sequence[str],
        round: int = 0,  # noqa: A002 - the maths calls it the round
    ) -> SelectionProblem:
        """A round whose utilities nobody measured: the clients' ids, domains and sizes, and
        the probe columns ``table`` holds (``F``, ``B``; ``loss`` stays in :attr:`table`).

        What a baseline rule reading no utility chooses on when the driver computes only what
        the rule reads (``plan_run(records=())``): U, U_d and ``cos_g`` are NaN (and so
        every predicted objective of a choice), F and B NaN unless given.

        Args:
            table: ``client_id, domain, n_samples`` and optionally ``F``, ``B``, ``loss``.
            k: clients to choose, 1 <= k <= N.
            domains: the D evaluation domains.
            round: the round.
        """
        n = len(table)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
            raise SelectionError(f"k={k!r} must be an integer in 1..{n} (the round's clients)")
        dup = table["client_id"].astype(str).duplicated()
        if dup.any():
            raise SelectionError(f"client id {table['client_id'][dup].iloc[0]!r} is listed twice")
        nan = np.full(n, np.nan)

        def column(name: str) -> np.ndarray:
            return table[name].to_numpy(dtype=float) if name in table.columns else nan

        F = column("F")
        logF = np.log(F)
        sd = logF.std()
        return cls(
            ids=table["client_id"].to_numpy(dtype=str),
            client_domains=table["domain"].to_numpy(dtype=str),
            domains=tuple(domains),
            U=nan,
            Ud=np.full((n, len(domains)), np.nan),
            F=F,
            F_z=(logF - logF.mean()) / sd if sd > 0 else np.zeros(n),
            B=column("B"),
            cos_g=nan,
            n_samples=table["n_samples"].to_numpy(dtype=np.int64),
            k=int(k),
            round=int(round),
            table=table.reset_index(drop=True),
        )

    @property
    def structure(self) -> str:
        """The structure of the problem's surrogate (``linear``, ``linear-fractional`` or
        ``black-box``, :data:`selection.surrogates.STRUCTURES`): what the routes can do."""
        return self.surrogate_model.structure

    def linear_view(self) -> SelectionProblem:
        """Under a ``linear`` surrogate, the same round as a ``mean`` problem over the
        surrogate's per-client values (:meth:`~selection.surrogates.base.Surrogate.client_values`):
        every selection has the same U(S), U_d(S) in both, so the exact routes solve the view
        with everything they do for the mean (persistent models, value grids, the portfolio).

        The problem itself where the surrogate's values are its own U, U_d (``mean``) or its
        structure is not linear. One view per problem: the routes' caches are per problem.
        """
        if self.structure != Structure.LINEAR:
            return self
        view = _VIEWS.get(self)
        if view is None:
            U, Ud = self.surrogate_model.client_values(self)
            if U is self.U and Ud is self.Ud:
                return self
            view = replace(
                self, U=np.asarray(U, float), Ud=np.asarray(Ud, float), surrogate=DEFAULT_SURROGATE
            )
            _VIEWS[self] = view
        return view

    def with_surrogate(self, surrogate: str) -> SelectionProblem:
        """The same round judged by another surrogate (a new problem: caches are per problem)."""
        if surrogate == self.surrogate:
            return self
        return replace(self, surrogate=surrogate)

    def with_aggregation(self, rule: str) -> SelectionProblem:
        """The same round with the picks weighted by ``rule`` in the surrogate's aggregate
        (U_d(S, w), :meth:`~selection.surrogates.base.Surrogate.under`; a new problem where the
        rule is not the surrogate's own). SelectionError for a surrogate that models no
        aggregate (``mean``).

        Examples:
            >>> from selection.example import example_stats
            >>> from selection.problem import SelectionProblem
            >>> p = SelectionProblem.from_stats(example_stats(), k=5, surrogate="weighted")
            >>> q = p.with_aggregation("uniform")
            >>> q.surrogate, q.structure, p.with_aggregation("samples") is p
            ('weighted[agg=uniform]', <Structure.LINEAR: 'linear'>, True)
        """
        judged = self.surrogate.under(rule)
        return self if judged is self.surrogate else replace(self, surrogate=judged)

    def with_vectors(self, ids, vectors: np.ndarray) -> SelectionProblem:
        """The same round with the clients' update vectors (rows named by ``ids``, any order)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        pos = {str(c): j for j, c in enumerate(ids)}
        missing = [str(c) for c in self.ids if str(c) not in pos]
        if vectors.ndim != 2 or vectors.shape[0] != len(pos) or missing:
            raise SelectionError(
                f"update vectors: {vectors.shape} for {len(pos)} ids; "
                f"clients without a row: {', '.join(missing[:5]) or 'none'}"
            )
        return replace(self, vectors=vectors[[pos[str(c)] for c in self.ids]])

    def ids_of(self, idx) -> list[str]:
        """Client ids of the selected indices, in index order."""
        return [str(self.ids[i]) for i in sorted(int(j) for j in idx)]
