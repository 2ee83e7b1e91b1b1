"""Baseline selection rules as registered objects: one module each, like formulations.

A baseline picks K client indices from one round's :class:`~selection.problem.SelectionProblem`
by a fixed rule (no optimization): FedAvg's sampling, uniform sampling, a domain quota, the
Fisher top-K, power-of-choice, q-FFL's sampling. It declares its name, whether it takes an
argument (its name, parser and an example), whether the study counts it as a *baseline* to
beat (``all``, full participation, is a reference instead) and the entry the study runs by
default. :func:`selection.selectors.make_selector`, ``spec_forms`` (the CLI's help and
``fedsel methods``) and the study's baseline set read only this registry.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import pandas as pd

from selection.baselines.reads import PROBES_EVERY_CLIENT, Reads
from selection.errors import SelectionError

__all__ = ["Baseline", "register", "baselines", "get_baseline"]

_REGISTRY: dict[str, type[Baseline]] = {}


class Baseline(ABC):
    """A rule choosing K of the round's clients.

    Class attributes:
        name: the spec name (``power-of-choice``).
        summary: one line for ``fedsel methods``.
        arg: the argument's name (``d``, ``q``) or None when the rule takes none.
        arg_example: a value shown in errors and help (``10``).
        integer: the argument is an integer.
        minimum: the smallest valid argument.
        is_baseline: the study compares formulations against it (``all`` is not: a reference).
        study_entry: the entry the default study runs (None: not in the default study).
        order: position in listings.
        choices: the argument's words where it is a word, not a number (``divfl:stale``).
        reads: what the rule reads of the clients, as a deployment pays it: ``nothing``
            (sizes only), ``probe`` (a probe pass of every client: F or loss at w_t),
            ``probe-candidates`` (of the candidates it drew), ``probe-picks`` (of the picks),
            ``updates`` (the update the server last committed from each client: kept, not
            paid again), ``probe-gradients`` (a probe pass of every client uploading its
            model-sized gradient), ``fresh-updates`` (every client trains at w_t). A rule
            whose reads depend on its argument sets them per instance.
        probe_floats: numbers each probed client uploads (:attr:`MODEL_SIZED`: a model).
        reports: the probe-pass fields those numbers are (``loss``, ``F``): what a privacy
            mode clips and noises.
        aggregation: how the rule's authors weight its picks in the aggregate: ``samples``
            (p_i ∝ n_i, FedAvg's) or ``uniform`` (1/K: Oort, power-of-choice, FedCor,
            clustered sampling); a spec's ``agg=`` overrides it (an ablation).

    Examples:
        >>> import numpy as np
        >>> import pandas as pd
        >>> from selection.baselines.base import baselines
        >>> from selection.problem import SelectionProblem
        >>> stats = pd.DataFrame({"round": 0, "client_id": ["a", "b", "c"],
        ...     "domain": ["x", "x", "y"], "n_samples": [10, 30, 20], "F": [5.0, 1.0, 3.0],
        ...     "B": 0.1, "cos_g": 0.5, "U": 70.0, "U_x": 70.0, "U_y": 70.0})
        >>> problem = SelectionProblem.from_stats(stats, k=2)  # 3 clients, K = 2
        >>> rule = baselines()["fisher-topk"]("fisher-topk")  # the K largest Fisher traces F
        >>> picked = rule.pick(problem, np.random.default_rng(0))
        >>> problem.ids[picked].tolist(), rule.reads, rule.probed_by(problem.n, picked).tolist()
        (['a', 'c'], <Reads.PROBE: 'probe'>, [0, 1, 2])
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    arg: ClassVar[str | None] = None
    arg_example: ClassVar[str] = ""
    choices: ClassVar[tuple[str, ...]] = ()
    integer: ClassVar[bool] = False
    minimum: ClassVar[float] = 0.0
    is_baseline: ClassVar[bool] = True
    study_entry: ClassVar[str | None] = None
    order: ClassVar[int] = 100
    reads: ClassVar[str] = Reads.NOTHING
    probe_floats: ClassVar[int] = 1
    reports: ClassVar[tuple[str, ...]] = ("loss",)
    aggregation: ClassVar[str] = "samples"
    #: ``probe_floats`` of a probe upload as large as the model
    MODEL_SIZED: ClassVar[int] = -1

    def __init__(self, spec: str, value: float | str | None = None) -> None:
        self.spec = spec
        self.value = value
        #: indices of the clients the last pick probed (what a deployment pays for)
        self.probed: np.ndarray = np.empty(0, dtype=np.int64)

    def probed_by(self, n: int, picked: np.ndarray) -> np.ndarray:
        """Indices of the clients whose probe pass the last pick read (``reads``)."""
        if self.reads in PROBES_EVERY_CLIENT:
            return np.arange(n)
        if self.reads == Reads.PROBE_PICKS:
            return np.asarray(picked, dtype=np.int64)
        if self.reads == Reads.PROBE_CANDIDATES:
            return self.probed
        return np.empty(0, dtype=np.int64)

    def losses(self, problem, idx, *, minimum: float = -math.inf) -> np.ndarray:
        """The round's reported ``loss`` column (N,), checked at the clients ``idx``: finite
        and at least ``minimum`` (SelectionError naming the first bad client, or the column's
        absence)."""
        table = problem.table
        if table is None or "loss" not in table.columns:
            raise SelectionError(f"{self.spec}: the round's statistics have no column loss")
        loss = pd.to_numeric(table["loss"], errors="coerce").to_numpy(dtype=float)
        for i in np.asarray(idx, dtype=np.int64):
            if not math.isfinite(loss[i]) or loss[i] < minimum:
                raise SelectionError(
                    f"{self.spec}: column loss of client {problem.ids[i]} is {loss[i]!r}"
                )
        return loss

    @classmethod
    def counts_as_baseline(cls, arg: str | None) -> bool:
        """Whether the study compares formulations against ``name:arg`` (default
        :attr:`is_baseline`; a rule's upper-bound variant, e.g. ``divfl:fresh``, is not)."""
        return cls.is_baseline

    @classmethod
    def spec_form(cls) -> str:
        return f"{cls.name}:{cls.arg}" if cls.arg else cls.name

    #: the q of q-FFL's aggregation weights (w_i ∝ n_i·loss_i^q) this rule asks for, or None
    def aggregation_q(self) -> float | None:
        return None

    def aggregation_weights(self, problem, ids) -> dict[str, float] | None:
        """The committed clients' aggregation weights by id (summing to 1) as the rule's
        authors aggregate (:attr:`aggregation`): 1/K each for ``uniform``; None for
        ``samples``: the trainer's sample weights (or q-FFL's, through :meth:`aggregation_q`)."""
        from selection.aggregation import Aggregation, pick_weights

        if Aggregation(self.aggregation) is Aggregation.SAMPLES:
            return None  # the trainer's own
        return pick_weights(self.aggregation, problem, ids)

    @abstractmethod
    def pick(self, problem, rng: np.random.Generator) -> np.ndarray:
        """The chosen client indices (K of them), drawing from ``rng`` only."""


def register(cls: type[Baseline]) -> type[Baseline]:
    """Class decorator: make ``cls`` a selector spec under ``cls.name``.

    Examples:
        >>> import numpy as np
        >>> from selection.baselines.base import Baseline, baselines, register
        >>> @register
        ... class FirstK(Baseline):
        ...     name = "first-k"
        ...     summary = "the first K clients of the table"
        ...     def pick(self, problem, rng):
        ...         return np.arange(problem.k)
        >>> baselines()["first-k"] is FirstK, FirstK.spec_form(), FirstK.is_baseline
        (True, 'first-k', True)
        >>> from selection.baselines.base import _REGISTRY
        >>> del _REGISTRY["first-k"]  # unregister: the example leaves the registry as it was
        >>> class Nameless(FirstK):
        ...     name = ""
        >>> register(Nameless)
        Traceback (most recent call last):
        ...
        TypeError: Nameless has no name
    """
    if not cls.name or not str(cls.name).strip():
        raise TypeError(f"{cls.__name__} has no name")
    from selection.plugins import guard_builtin

    guard_builtin(_REGISTRY, cls.name, cls, "baseline")
    _REGISTRY[cls.name] = cls
    return cls


def baselines() -> dict[str, type[Baseline]]:
    """Every registered rule, in listing order (installed plugins' included).

    Examples:
        >>> from selection.baselines.base import baselines
        >>> rules = baselines()
        >>> list(rules)[:3], [name for name, cls in rules.items() if not cls.is_baseline]
        (['fedavg', 'proportional', 'random'], ['all'])
        >>> rules["power-of-choice"].spec_form(), rules["power-of-choice"].reads
        ('power-of-choice:d', <Reads.PROBE_CANDIDATES: 'probe-candidates'>)
    """
    import selection.baselines  # noqa: F401 - discovery registers the modules
    from selection.plugins import plugin_classes

    for cls in plugin_classes("fedsel.baselines", Baseline):
        _REGISTRY.setdefault(cls.name, cls)

    return dict(sorted(_REGISTRY.items(), key=lambda kv: (kv[1].order, kv[0])))


def get_baseline(name: str) -> type[Baseline]:
    try:
        return baselines()[name]
    except KeyError:
        raise SelectionError(f"unknown baseline {name!r}") from None
