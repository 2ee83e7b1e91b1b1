"""The options every route takes, declared once with their defaults: :class:`RouteOptions`.

The exact formulations (``eps``, ``maxmin``, ``fisher-fair``), the smallest-gap route and
``eps-rel`` each take one frozen :class:`RouteOptions` (``EpsSolver(eps=5,
options=RouteOptions(backend="cbc"))``); their keyword arguments (``EpsSolver(eps=5,
backend="cbc")``) are mapped into it in one place, :meth:`RouteOptions.of`. A solver declares
the fields it honours (:attr:`selection.solvers.base.Solver.route_options`), and
:class:`~selection.solvers.base.SweepOptions` is a RouteOptions with a sweep's own settings.
The checks are those of :func:`~selection.solvers.params.check_route_options`, one message style
whichever route, command or library function receives them; a backend's name is checked against
the registered routes by the route that takes it
(:func:`selection.solvers.milp.portfolio.check_backend`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, ClassVar, Self

from selection.solvers.params import check_int, check_nonneg, check_route_options

__all__ = ["RouteOptions", "Counts", "DEFAULT_SCALE", "DEFAULT_ENUM_LIMIT"]

#: CP-SAT's integer scaling of the utilities: 0.001 % resolution
#: (:mod:`selection.solvers.milp.cpsat`)
DEFAULT_SCALE = 1000
#: the largest C(N, K) that ``auto`` enumerates (:mod:`selection.solvers.milp.portfolio`)
DEFAULT_ENUM_LIMIT = 200_000


class Counts(StrEnum):
    """Whether the MILP gets per-domain count columns n_g = Σ_{i in domain g} x_i, integer and
    branched on first (:meth:`selection.solvers.milp.spec.MilpSpec.build`).

    Examples:
        >>> from selection.solvers.options import Counts
        >>> Counts("on") is Counts.ON, [str(c) for c in Counts]
        (True, ['auto', 'on', 'off'])
    """

    AUTO = "auto"  # the backend's ``counts_default`` (on for SCIP; off for CBC, HiGHS, CP-SAT)
    ON = "on"
    OFF = "off"


@dataclass(frozen=True, kw_only=True)
class RouteOptions:
    """How a formulation's point is solved, whichever route takes it; validated (and
    normalized: ``time_limit`` inf is None, ``counts`` a :class:`Counts`) at construction.

    Attributes:
        backend: ``auto`` (enumeration if C(N, K) <= enum_limit, else the measured portfolio
            of :func:`selection.solvers.milp.portfolio.portfolio`), ``enum``, ``search`` or a
            MILP backend (``highs``, ``cbc``, ``cpsat``, ``scip``).
        time_limit: seconds per point, the whole solve (building the model on first use,
            LP fixing and both lexicographic stages together); on expiry the incumbent is
            returned with status ``time_limit`` (an empty selection when there is none). The
            deadline is checked between steps, so one step that cannot be interrupted (the
            model build, HiGHS presolve, writing CBC's model file) may overrun it. None or
            inf: none. Ignored by enumeration.
        seed: seeds HiGHS and CP-SAT (``random_seed``), SCIP (``randomseedshift``) and the
            local searches.
        threads: CBC threads / CP-SAT workers / HiGHS threads (default 1, deterministic);
            SCIP runs on one.
        scale: CP-SAT integer scaling of the utilities (default 1000: 0.001 % resolution).
        enum_limit: largest C(N, K) that ``auto`` enumerates.
        mip_gap: relative MIP gap per stage (default 0: proven optimal). Above 0 the status
            is ``feasible`` (optimal within the gap), useful on large N.
        counts: per-domain count columns in the MILP (:class:`Counts`): ``on``, ``off`` or
            ``auto`` (the backend's ``counts_default``: on for SCIP, where branching on them
            first paid (cross-penalty N = 1,000), off for CBC, HiGHS and CP-SAT, where it did
            not; measured per family in results/benchmarks/exact_families_200_1000.md).
        tolerance: absolute MIP gap per stage in the units the first objective is reported
            in (points of the mean for U and worst, Σ F_z for fisher-fair; the model gets
            K·tolerance where it sums over the K clients); default 0: proven optimal. Above 0
            the status is ``feasible`` and ``bound`` is at most the point's value +
            tolerance: a certified near-optimum, often far faster where proofs are hard.

    Examples:
        >>> from selection.example import tied_problem
        >>> from selection.solvers.eps import EpsSolver
        >>> from selection.solvers.options import RouteOptions
        >>> options = RouteOptions(backend="highs", time_limit=float("inf"))
        >>> options.time_limit, str(options.counts)  # inf: no limit
        (None, 'auto')
        >>> result = EpsSolver(eps=10.0, options=options).solve(tied_problem())
        >>> result.backend, result.ids
        ('highs', ('a0', 'b0'))
        >>> RouteOptions(mip_gap=1.5)
        Traceback (most recent call last):
        ...
        ValueError: mip_gap=1.5 must be a relative gap in [0, 1)
    """

    backend: str = "auto"
    time_limit: float | None = None
    seed: int = 0
    threads: int | None = None
    scale: int = DEFAULT_SCALE
    enum_limit: int = DEFAULT_ENUM_LIMIT
    mip_gap: float = 0.0
    counts: Counts = Counts.AUTO
    tolerance: float = 0.0

    #: whether these options are a whole front's (:class:`~selection.solvers.base.SweepOptions`):
    #: then backend ``bb`` (one search for the whole front) is a route too
    whole_front: ClassVar[bool] = False

    def __post_init__(self) -> None:
        for name, value in self._checked().items():
            object.__setattr__(self, name, value)

    def _checked(self) -> dict[str, Any]:
        """The fields' values checked and normalized; ValueError naming the first offender."""
        try:
            counts = Counts(self.counts)
        except ValueError:
            raise ValueError(f"counts={self.counts!r} must be auto, on or off") from None
        mip_gap = check_nonneg("mip_gap", self.mip_gap, allow_none=False)
        if mip_gap >= 1:
            raise ValueError(f"mip_gap={self.mip_gap!r} must be a relative gap in [0, 1)")
        route = check_route_options(
            backend=self.backend,
            time_limit=self.time_limit,
            tolerance=self.tolerance,
            seed=self.seed,
            front=self.whole_front,
        )
        return {
            "counts": counts,
            "mip_gap": mip_gap,
            "time_limit": route["time_limit"],
            "tolerance": route["tolerance"],
            "seed": route["seed"],
            "threads": check_int("threads", self.threads),
            "scale": check_int("scale", self.scale),
            "enum_limit": check_int("enum_limit", self.enum_limit, lo=0),
        }

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options of the routes, in their declared order.

        Examples:
            >>> from selection.solvers.options import RouteOptions
            >>> RouteOptions.names()[:3]
            ('backend', 'time_limit', 'seed')
        """
        return tuple(f.name for f in fields(RouteOptions))

    @classmethod
    def of(
        cls,
        options: RouteOptions | None = None,
        /,
        *,
        takes: frozenset[str] | None = None,
        who: str = "",
        **keywords: Any,
    ) -> Self:
        """The options a constructor was given: the fields of ``options`` (default: the
        defaults) this class has, then ``keywords`` (field names) over them. The one place a
        solver's keyword arguments become the object.

        Args:
            options: options to start from (a :class:`RouteOptions` or a subclass).
            takes: the fields the caller honours (None: all): ``options``' other fields keep
                their defaults, and another keyword is refused as Python refuses an unknown
                keyword argument.
            who: how the refusal names the caller (``EpsRelSolver.__init__``).
            keywords: field values.

        Raises:
            TypeError: a keyword that is not a field the caller takes.
            ValueError: a value the checks refuse (naming it).

        Examples:
            >>> from selection.solvers.options import RouteOptions
            >>> base = RouteOptions(backend="cbc", threads=2)
            >>> given = RouteOptions.of(base, seed=3)
            >>> given.backend, given.threads, given.seed
            ('cbc', 2, 3)
            >>> RouteOptions.of(base, takes=frozenset({"backend", "seed"})).threads is None
            True
            >>> RouteOptions.of(takes=frozenset({"seed"}), who="Toy.__init__", threads=2)
            Traceback (most recent call last):
            ...
            TypeError: Toy.__init__() got an unexpected keyword argument 'threads'
        """
        names = {f.name for f in fields(cls)}
        allowed = names if takes is None else names & set(takes)
        for name in keywords:
            if name not in allowed:
                caller = who or cls.__name__
                raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}")
        given = {} if options is None else vars(options)
        return cls(**{**{n: given[n] for n in allowed if n in given}, **keywords})
