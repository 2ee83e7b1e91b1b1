"""The interface of a surrogate of U(S) and U_d(S), and the registry every caller reads.

Training commits the sample-weighted aggregate w_t + Σ_{i∈S} p_i Δ_i (p_i = n_i / Σ_{j∈S} n_j),
not the mean of single-client models; a surrogate predicts what that aggregate reaches from
one round's per-client measurements. Each declares its **structure**, which tells the solver
routes what they can do with it:

* ``linear``: U_d(S) is linear in x at fixed K (the MILP routes as written);
* ``linear-fractional``: a ratio of two linear functions with a common positive denominator
  (the MILP routes after multiplying by it, with Dinkelbach iterations for ratio objectives);
* ``black-box``: only evaluations (enumeration, NSGA-II, local search).

A surrogate maps selections to values in two forms: index blocks ``idx`` (M, K) (enumeration)
and 0/1 matrices ``X`` (M, N) (NSGA-II, the objective table); both return U (M,) and U_d (M, D),
accuracy in %.

A surrogate that models the aggregate declares the rule of its weights p_i (``aggregation``:
``samples``, FedAvg's) and can be asked about the same aggregate under another rule
(:meth:`Surrogate.under`): U_d(S, w), what ``agg=best`` chooses w by. A weighted mean
Σ p_i v_i of per-client values is ``linear`` under 1/K, ``linear-fractional`` under sample
weights and ``black-box`` under domain-balanced ones (a pick's weight depends on who else of
its domain is picked); a black-box surrogate stays black-box.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from selection.aggregation import Aggregation, block_weights
from selection.defaults import DEFAULT_SURROGATE  # re-exported: the registry names it
from selection.errors import SelectionError, unknown_name

if TYPE_CHECKING:
    from selection.problem import SelectionProblem

__all__ = [
    "DEFAULT_SURROGATE",
    "Structure",
    "STRUCTURES",
    "SURROGATES",
    "Surrogate",
    "Swaps",
    "register",
    "surrogates",
    "get_surrogate",
    "SurrogateSpec",
]


class Structure(StrEnum):
    """What a surrogate's U_d(S) is in x at fixed K, so what a solver route can do with it
    (a ``str``: a plugin may still write ``structure = "linear"``; :func:`register` makes it
    the member).

    Examples:
        >>> from selection.surrogates import Structure, get_surrogate
        >>> get_surrogate("mean").structure == Structure.LINEAR
        True
        >>> Structure("linear-fractional"), Structure.BLACK_BOX == "black-box"
        (<Structure.LINEAR_FRACTIONAL: 'linear-fractional'>, True)
    """

    LINEAR = "linear"
    LINEAR_FRACTIONAL = "linear-fractional"
    BLACK_BOX = "black-box"


STRUCTURES = tuple(s.value for s in Structure)

SURROGATES: dict[str, type[Surrogate]] = {}


class Surrogate(ABC):
    """Base class: set ``name``, ``structure``, ``summary``; write :meth:`block`.

    Attributes:
        name: the key (``--surrogate NAME``, ``spec@NAME``).
        structure: one of :data:`STRUCTURES`.
        needs_logits: True when the problem must carry validation logits.
        summary: one help line.
        order: position in listings.
        aggregation: the rule of the weights p_i its aggregate combines the picks with
            (``samples`` for the surrogates of FedAvg's w_t + Σ p_i Δ_i); None where it models
            no aggregate (``mean``): it cannot be asked about other weights (:meth:`under`).

    Examples:
        >>> import numpy as np
        >>> import pandas as pd
        >>> from selection.problem import SelectionProblem
        >>> from selection.surrogates.base import get_surrogate
        >>> stats = pd.DataFrame({"round": 0, "client_id": ["a", "b", "c"],
        ...     "domain": ["x", "x", "y"], "n_samples": [10, 30, 20], "F": 1.0, "B": 0.1,
        ...     "cos_g": 0.5, "U": [60.0, 70.0, 80.0], "U_x": [70.0, 90.0, 50.0],
        ...     "U_y": [50.0, 50.0, 100.0]})
        >>> problem = SelectionProblem.from_stats(stats, k=2)  # 3 clients, K = 2, domains x, y
        >>> mean = get_surrogate("mean")  # U_d(S): the mean of the selected clients' U_{i,d}
        >>> mean.structure
        <Structure.LINEAR: 'linear'>
        >>> U, Ud = mean.block(problem, np.array([[0, 1], [1, 2]]))  # S = {a, b} and S = {b, c}
        >>> U.tolist(), Ud.tolist()
        ([65.0, 75.0], [[80.0, 50.0], [70.0, 75.0]])
        >>> U, Ud = mean.matrix(problem, np.array([[1, 1, 0]]))  # S = {a, b} as a 0/1 row
        >>> U.tolist(), Ud.tolist()
        ([65.0], [[80.0, 50.0]])
    """

    name: ClassVar[str] = ""
    structure: ClassVar[Structure] = Structure.BLACK_BOX
    needs_logits: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    order: ClassVar[int] = 100
    aggregation: ClassVar[Aggregation | None] = None

    def under(self, rule: Aggregation | str) -> Surrogate:
        """This surrogate's aggregate with the picks weighted by ``rule``: U_d(S, w).

        The registered (shared) surrogate where ``rule`` is its own; else one copy per rule,
        its structure as the module docstring says.

        Raises:
            SelectionError: the surrogate models no aggregate, naming those that do.

        Examples:
            >>> from selection.surrogates.base import get_surrogate
            >>> weighted = get_surrogate("weighted")
            >>> weighted.under("samples") is weighted, weighted.under("uniform").structure
            (True, <Structure.LINEAR: 'linear'>)
            >>> weighted.under("domain").structure, get_surrogate("ensemble").under("uniform").structure
            (<Structure.BLACK_BOX: 'black-box'>, <Structure.BLACK_BOX: 'black-box'>)
            >>> get_surrogate("mean").under("uniform")
            Traceback (most recent call last):
            ...
            selection.errors.SelectionError: the mean surrogate models no aggregate, so no weights of it; weighted, ensemble, softvote do
        """
        base = get_surrogate(self.name)
        if base.aggregation is None:
            able = ", ".join(n for n, c in surrogates().items() if c.aggregation is not None)
            raise SelectionError(
                f"the {self.name} surrogate models no aggregate, so no weights of it; {able} do"
            )
        rule = Aggregation(rule)
        if rule is base.aggregation:
            return base
        key = (self.name, rule)
        if key not in _UNDER:
            other = copy.copy(base)
            other.aggregation = rule
            if base.structure != Structure.BLACK_BOX:  # a weighted mean of client values
                other.structure = {
                    Aggregation.UNIFORM: Structure.LINEAR,
                    Aggregation.SAMPLES: Structure.LINEAR_FRACTIONAL,
                }.get(rule, Structure.BLACK_BOX)
            _UNDER[key] = other
        return _UNDER[key]

    def pick_weights(self, problem: SelectionProblem, idx: np.ndarray, dtype: type = float):
        """The weights p (M, K) of the picks ``idx`` (M, K) in this surrogate's aggregate
        (:func:`selection.aggregation.block_weights` under :attr:`aggregation`)."""
        rule = Aggregation.UNIFORM if self.aggregation is None else self.aggregation
        return block_weights(rule, problem.n_samples, problem.client_domains, idx, dtype)

    def ratio_weights(self, problem: SelectionProblem) -> np.ndarray | None:
        """w (N,) with p_i = w_i / Σ_{j∈S} w_j for every selection S (n under sample weights,
        ones under 1/K); None where the rule's weights are of no such form (domain-balanced)."""
        rule = Aggregation.UNIFORM if self.aggregation is None else self.aggregation
        if rule is Aggregation.SAMPLES:
            return problem.n_samples.astype(float)
        return np.ones(problem.n) if rule is Aggregation.UNIFORM else None

    def logits_of(self, problem: SelectionProblem):
        """The problem's validation logits (SelectionError naming this surrogate if absent)."""
        if problem.logits is None:
            raise SelectionError(
                f"the {self.name} surrogate needs the round's validation logits (fedsel oracle "
                "writes them to logits/; pass --logits)"
            )
        return problem.logits

    def client_values(self, problem: SelectionProblem) -> tuple[np.ndarray, np.ndarray]:
        """The per-client (U (N,), U_d (N, D)) a ``linear`` or ``linear-fractional`` surrogate
        combines over a selection: what the exact routes put in their rows. Default: the
        round's single-update utilities."""
        return problem.U, problem.Ud

    def client_weights(self, problem: SelectionProblem) -> np.ndarray:
        """The per-client weights w_i of a ``linear-fractional`` surrogate's ratio
        Σ w_i x_i v_i / Σ w_i x_i (N,) (:meth:`ratio_weights`); ones for a ``linear`` one."""
        w = self.ratio_weights(problem) if self.structure == Structure.LINEAR_FRACTIONAL else None
        return np.ones(problem.n) if w is None else w

    @abstractmethod
    def block(
        self, problem: SelectionProblem, idx: np.ndarray, *, need_ud: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(U (M,), U_d (M, D) or None when not ``need_ud``) of the index block ``idx`` (M, K)."""

    def matrix(self, problem: SelectionProblem, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(U (M,), U_d (M, D)) of 0/1 selections ``X`` (M, N); default: rows as index blocks."""
        rows = [np.flatnonzero(r > 0.5) for r in X]
        sizes = {len(r) for r in rows}
        if len(sizes) == 1:
            U, Ud = self.block(problem, np.array(rows, dtype=np.int64).reshape(len(rows), -1))
            return U, Ud
        U = np.empty(len(rows))
        Ud = np.empty((len(rows), problem.d))
        for m, r in enumerate(rows):
            u, ud = self.block(problem, r[None, :])
            U[m], Ud[m] = u[0], ud[0]
        return U, Ud

    def swaps(self, problem: SelectionProblem, selected) -> Swaps:
        """The values of the selections one swap away from ``selected`` (:class:`Swaps`):
        what a local search asks. Default: each neighbour scored through :meth:`block`."""
        return Swaps(self, problem, selected)

    def value_bounds(self, problem: SelectionProblem) -> tuple[np.ndarray, np.ndarray] | None:
        """Proven (lower, upper) bounds on U_d(S) over every K-selection, shape (D,) each, %;
        None where the surrogate knows none beyond [0, 100]."""
        return None

    def domain_shares(self, problem: SelectionProblem) -> np.ndarray | None:
        """w (D,) with U(S) = Σ_d w_d U_d(S) for every selection, where the surrogate's U is
        such a mix of its domain values; None where it is not."""
        return None


class Swaps:
    """A selection S and the values of its one-swap neighbours S − {i} + {j}.

    Args:
        surrogate: the surrogate that scores them.
        problem: the round's problem.
        selected: the K indices of S.

    Examples:
        >>> import numpy as np
        >>> import pandas as pd
        >>> from selection.problem import SelectionProblem
        >>> from selection.surrogates.base import Swaps, get_surrogate
        >>> stats = pd.DataFrame({"round": 0, "client_id": ["a", "b", "c"],
        ...     "domain": ["x", "x", "y"], "n_samples": [10, 30, 20], "F": 1.0, "B": 0.1,
        ...     "cos_g": 0.5, "U": [60.0, 70.0, 80.0], "U_x": [70.0, 90.0, 50.0],
        ...     "U_y": [50.0, 50.0, 100.0]})
        >>> problem = SelectionProblem.from_stats(stats, k=2)  # 3 clients, K = 2, domains x, y
        >>> swaps = Swaps(get_surrogate("mean"), problem, [1, 0])  # S = {a, b}
        >>> U, Ud = swaps.current()
        >>> U, Ud.tolist()
        (65.0, [80.0, 50.0])
        >>> U, Ud, score = swaps.values(0, np.array([0, 2]))  # S itself, then S - {a} + {c}
        >>> U.tolist(), Ud.tolist()
        ([65.0, 75.0], [[80.0, 50.0], [70.0, 75.0]])
        >>> swaps.move_to([2, 1])  # S = {b, c}
        >>> swaps.selected.tolist(), swaps.current()[0]
        ([1, 2], 75.0)
    """

    def __init__(self, surrogate: Surrogate, problem: SelectionProblem, selected) -> None:
        self.surrogate, self.problem = surrogate, problem
        self.move_to(selected)

    def move_to(self, selected) -> None:
        """Make ``selected`` (K indices) the current selection."""
        self.selected = np.sort(np.asarray(selected, dtype=np.int64))

    def current(self) -> tuple[float, np.ndarray]:
        """(U, U_d (D,)) of the current selection."""
        U, Ud = self.surrogate.block(self.problem, self.selected[None, :])
        return float(U[0]), Ud[0]

    def values(self, out: int, ins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(U (M,), U_d (M, D), score (M,)) of S − {out} + {j} for each j of ``ins`` (M,); j =
        ``out`` is S itself. ``score`` is a smooth measure of how near each selection is to a
        better value, comparable within one call (ties of a step-valued surrogate are broken
        by it); zeros here."""
        keep = self.selected[self.selected != out]
        idx = np.column_stack([np.tile(keep, (len(ins), 1)), np.asarray(ins, dtype=np.int64)])
        U, Ud = self.surrogate.block(self.problem, idx)
        return U, Ud, np.zeros(len(idx))


def register(cls: type[Surrogate]) -> type[Surrogate]:
    """Class decorator adding a surrogate to the registry under ``cls.name``.

    Examples:
        >>> from selection.surrogates.base import SURROGATES, Surrogate, register, surrogates
        >>> @register
        ... class Best(Surrogate):
        ...     name = "best"
        ...     summary = "the best selected client's U_{i,d}"
        ...     def block(self, problem, idx, *, need_ud=True):
        ...         return problem.U[idx].max(axis=1), problem.Ud[idx].max(axis=1)
        >>> surrogates()["best"] is Best, Best.structure
        (True, <Structure.BLACK_BOX: 'black-box'>)
        >>> del SURROGATES["best"]  # unregister: the example leaves the registry as it was
        >>> class Curved(Best):
        ...     name, structure = "curved", "convex"
        >>> register(Curved)
        Traceback (most recent call last):
        ...
        TypeError: Curved: structure 'convex' is not one of ('linear', 'linear-fractional', ...)
    """
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    if cls.structure not in STRUCTURES:
        raise TypeError(f"{cls.__name__}: structure {cls.structure!r} is not one of {STRUCTURES}")
    cls.structure = Structure(cls.structure)
    from selection.plugins import guard_builtin

    guard_builtin(SURROGATES, cls.name, cls, "surrogate")
    SURROGATES[cls.name] = cls
    return cls


def surrogates() -> dict[str, type[Surrogate]]:
    """Every registered surrogate by name, in display order (installed plugins' included).

    Examples:
        >>> from selection.surrogates.base import surrogates
        >>> known = surrogates()
        >>> list(known)
        ['mean', 'weighted', 'ensemble', 'softvote']
        >>> known["weighted"].structure, known["ensemble"].needs_logits
        (<Structure.LINEAR_FRACTIONAL: 'linear-fractional'>, True)
    """
    import selection.surrogates  # noqa: F401  (registers the built-in surrogates)
    from selection.plugins import plugin_classes

    for cls in plugin_classes("fedsel.surrogates", Surrogate):
        if cls.name not in SURROGATES:
            register(cls)

    return dict(sorted(SURROGATES.items(), key=lambda kv: (kv[1].order, kv[0])))


_INSTANCES: dict[str, Surrogate] = {}
#: (name, rule) -> the registered surrogate's copy under another rule (:meth:`Surrogate.under`)
_UNDER: dict[tuple[str, Aggregation], Surrogate] = {}


def get_surrogate(name: str) -> Surrogate:
    """The (stateless, shared) surrogate called ``name`` (SelectionError naming the choices).

    Examples:
        >>> from selection.surrogates.base import get_surrogate
        >>> weighted = get_surrogate("weighted")
        >>> type(weighted).__name__, weighted.structure, weighted is get_surrogate("weighted")
        ('WeightedSurrogate', <Structure.LINEAR_FRACTIONAL: 'linear-fractional'>, True)
        >>> get_surrogate("median")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: unknown surrogate 'median'; did you mean 'mean'? (choose one of mean, ...
    """
    known = surrogates()
    if name not in known:
        raise SelectionError(unknown_name("surrogate", name, known))
    if name not in _INSTANCES:
        _INSTANCES[name] = known[name]()
    return _INSTANCES[name]


class SurrogateSpec(str):
    """A surrogate as a spec or ``--surrogate`` names it, parsed once: its name (a ``str``, so
    history columns, TOML and comparisons read it as text) carrying the registered, shared
    surrogate object. Parsing a parsed one returns it unchanged, so a spec's surrogate is looked
    up once, where the spec is parsed; the problems built from it hold the same object.

    Examples:
        >>> from selection.surrogates.base import SurrogateSpec, get_surrogate
        >>> judged = SurrogateSpec(" weighted ")
        >>> judged, judged.model is get_surrogate("weighted"), SurrogateSpec(judged) is judged
        ('weighted', True, True)
        >>> judged.model.structure, judged == "weighted"
        (<Structure.LINEAR_FRACTIONAL: 'linear-fractional'>, True)
        >>> SurrogateSpec("median")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: unknown surrogate 'median'; did you mean 'mean'? (choose one of mean, ...
    """

    model: Surrogate

    def __new__(cls, text: str) -> SurrogateSpec:
        if isinstance(text, SurrogateSpec):
            return text
        model = get_surrogate(str(text).strip())
        out = super().__new__(cls, model.name)
        out.model = model
        return out

    def under(self, rule: Aggregation | str) -> SurrogateSpec:
        """This surrogate with the picks weighted by ``rule`` (:meth:`Surrogate.under`): itself
        where the rule is the surrogate's own, else named ``NAME[agg=RULE]``.

        Examples:
            >>> from selection.surrogates.base import SurrogateSpec
            >>> judged = SurrogateSpec("weighted").under("domain")
            >>> judged, judged.model.structure, judged.under("samples")
            ('weighted[agg=domain]', <Structure.BLACK_BOX: 'black-box'>, 'weighted')
        """
        model = self.model.under(rule)
        if model is self.model:
            return self
        base = get_surrogate(model.name)
        if model is base:
            return SurrogateSpec(base.name)
        out = str.__new__(SurrogateSpec, f"{model.name}[agg={model.aggregation}]")
        out.model = model
        return out

    def __reduce__(self):
        # to a worker process by name: the worker's registry holds the same surrogate
        base = get_surrogate(self.model.name)
        if self.model is base:
            return SurrogateSpec, (str(self),)
        return _under, (self.model.name, str(self.model.aggregation))


def _under(name: str, rule: str) -> SurrogateSpec:
    """A reweighted surrogate rebuilt in another process (:meth:`SurrogateSpec.under`)."""
    return SurrogateSpec(name).under(rule)
