"""What ``fedsel demo`` runs (:class:`DemoSettings`) and the oracle settings live-training runs
start from (:data:`DEMO_ORACLE`), in a module of their own: the CLI reads their defaults for
its help without importing the training loop.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from fl_oracle.experiments.entry import Entry
from fl_oracle.experiments.oracle_defaults import DEMO_ORACLE
from selection.selectors import Spec, parse_spec

__all__ = ["DEFAULT_SELECTORS", "DEMO_ORACLE", "DemoSettings"]

DEFAULT_SELECTORS: tuple[str, ...] = (
    "proportional",
    "random",
    "power-of-choice:10",
    "fisher-topk",
    "qffl:1",
    "eps:5",
    "maxmin:2",
    "nsga2:knee",
)


@dataclass(frozen=True, kw_only=True)
class DemoSettings:
    """What the comparison runs.

    Attributes:
        rounds: training rounds per run.
        seeds: number of seeds (0..seeds-1); each seed is its own federation.
        k: clients selected per round.
        selectors: selector specs; the first is the reference run for fronts and statistics
            (each parsed once, here: :meth:`spec`).
        front_round: round whose statistics the fronts are swept on (default rounds // 2).
        front_delta: δ grid of the max-min sweep, percentage points.
        stats_mode: the information model of every run (:mod:`selection.information`);
            None: each spec's own (``fresh`` for a formulation without one, a baseline rule
            charged for what it reads).
    """

    rounds: int = 8
    seeds: int = 3
    k: int = 5
    selectors: tuple[str, ...] = DEFAULT_SELECTORS
    front_round: int | None = None
    front_delta: tuple[float, ...] = (0.0, 1.0, 2.0, 5.0, 10.0)
    stats_mode: str | None = None

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.seeds < 1 or self.k < 1:
            raise ValueError(
                f"rounds={self.rounds}, seeds={self.seeds} and k={self.k} must all be >= 1"
            )
        if not self.selectors:
            raise ValueError("the demo needs at least one selector")
        if len(set(self.selectors)) != len(self.selectors):
            raise ValueError(f"duplicate selector in {', '.join(self.selectors)}")
        if self.front_round is not None and not 0 <= self.front_round < self.rounds:
            raise ValueError(f"front_round={self.front_round} must lie in 0..{self.rounds - 1}")
        self.entries  # noqa: B018 - every selector parsed now: a bad spec fails here

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        """The selectors as :class:`~fl_oracle.experiments.entry.Entry` objects, each parsed
        once (by the constructor), their information model the run's."""
        specs = [(text, parse_spec(text)) for text in self.selectors]
        if self.stats_mode is not None:  # one information model for every run
            specs = [(t, replace(p, stats_mode=self.stats_mode)) for t, p in specs]
        return tuple(Entry(text, spec) for text, spec in specs)

    def spec(self, selector: str) -> Spec:
        """The parsed spec of one of ``selectors``, its information model the run's."""
        return next(e.spec for e in self.entries if e.text == selector)

    @property
    def chosen_round(self) -> int:
        """The round the fronts are swept on."""
        return self.rounds // 2 if self.front_round is None else self.front_round
