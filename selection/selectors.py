"""Selectors: the library API live training calls once per round.

Why one module past 450 lines: every kind of selector a round can hold — a formulation's, a
baseline rule's, a plain callable wrapped once — is one subclass of :class:`Selector` built
by :func:`make_selector` or :func:`as_selector`, and the round reads them all through the
base class's attributes; split, the base and its few subclasses would import one another.

A spec string is parsed once, at the edge, into a typed :class:`Spec` (:func:`parse_spec`);
a selector is built from it (or from the string) by :func:`make_selector` and called as
``selector(round_stats, k) -> list[str]``: it takes the round-stats table (when the table holds
several rounds, the last one is used), chooses ``k`` clients and returns their ids in table
order. Specs:

=====================  ==========================================================================
``eps:E``              ε-constraint: max U s.t. gap <= E percentage points (exact, ``eps`` solver)
``maxmin:D``           max worst-domain utility s.t. U >= U* − D points (exact, ``maxmin`` solver)
``weighted:a,b,...``   top-K by the weighted score (w_U, w_R, w_F, w_cos, w_B) of ``weighted``
``composite:a,b,c``    top-K by the problem statement's score α·log(1+F) + β·cos_g + γ·R
``nsga2[:PICK]``       NSGA-II front member, PICK in knee (default), max-utility, min-gap
``fisher-topk``        the K clients with the largest Fisher trace F
``random``             K clients uniformly at random
``all``                every client of the round (full participation; ignores k)
``proportional``       K clients drawn ∝ n_samples without replacement
``stratified``         a quota of ⌊K/D⌋ per domain (the rest to domains drawn ∝ their samples),
                       clients drawn ∝ n_samples within each domain
``power-of-choice:d``  d candidates drawn ∝ n_samples without replacement, keep the K with the
                       highest ``loss`` (lowest U when the table has no ``loss`` column), d >= K
``qffl:q``             K clients uniformly at random; the trainer reweights the aggregation with
                       q (exposed as ``aggregation_q``)
=====================  ==========================================================================

Modifiers follow ``@``, joined by ``+`` (:func:`parse_spec`): a surrogate of U(S), U_d(S)
(``mean`` default, ``weighted``, ``ensemble``; :mod:`selection.surrogates`), ``verify`` or
``verify=M`` (verified picks, :mod:`selection.verify`: the M best candidates, default 8, are
measured on the true aggregate and the best realized one is committed; needs an evaluator,
which the training loop supplies from the oracle), an information model
(:mod:`selection.information`: ``fresh``, ``stale``, ``probe``, ``pool:P``, ``predicted``;
what every client does per round and what the selector sees, read by the training drivers)
and the picks' aggregation weights ``agg=samples|uniform|domain`` (:mod:`selection.aggregation`)
or ``agg=best``, the weights chosen every round jointly with S by the formulation's objective
on the surrogate's U_d(S, w) (:mod:`selection.aggregation_choice`).
``eps:5@ensemble+verify`` is the ε-constraint on the logit ensemble with verified picks;
``maxmin:2@weighted+probe`` the max-min point on the probe pass's predictions;
``maxmin:2@weighted+agg=best`` the max-min pair (S, w) over the three weightings. A formulation
without an information model is ``fresh`` (the oracle's upper bound); a baseline rule without
one reads what the rule reads (``Baseline.reads``). The canonical form of a spec drops
defaults and orders the modifiers (information model, surrogate, verify, aggregation).

After each call a selector exposes:

* ``last`` — the :class:`~selection.solvers.result.SolveResult` of the committed selection: its
  ``objectives`` are the predicted values of :mod:`selection.objectives` (``utility``, ``gap``,
  ``worst``, ``U_<domain>``, ...), ``seconds`` the time spent choosing, ``status`` the solver's;
* ``fallback`` — "" normally; a message when the solve found no selection (an ε below the
  smallest achievable gap) and the **smallest-gap point** was committed instead: the ε is
  relaxed by bisection to the smallest feasible gap (within 1e-6 points), and the ε solver's
  answer there (highest U among the selections with that gap) is taken;
* ``aggregation_q`` — the q of ``qffl:q``, None for every other selector;
* ``chosen_aggregation`` — with ``agg=best``, the weighting rule chosen with the last
  selection (the weights :meth:`Selector.aggregation_weights` gives); None otherwise.

Randomness is per selector: each owns ``np.random.default_rng(seed)``; NSGA-II draws its run
seed from it, so successive rounds differ but the whole sequence repeats for the same seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd

from selection.aggregation import Aggregation
from selection.baselines.sampling import proportional_sample, stratified_sample
from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError, did_you_mean
from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.eps import min_gap_point
from selection.solvers.result import SolveResult, Status
from selection.specs import (
    ALIASES,
    Spec,
    bad_spec,
    parse_spec,
    selector_help,
    spec_forms,
    spec_number,
    split_specs,
)

__all__ = [
    # the typed spec (:mod:`selection.specs`), re-exported: a selector is built from it
    "Spec",
    "parse_spec",
    "spec_forms",
    "selector_help",
    "split_specs",
    "Selector",
    "CallableSelector",
    "as_selector",
    "make_selector",
    "min_gap_point",
    "proportional_sample",
    "stratified_sample",
]


def _result(problem: SelectionProblem, idx, method: str, param: str, t0: float) -> SolveResult:
    from selection.solvers.base import checked_selection

    k = None if method == "all" else problem.k  # full participation ignores K
    sel = checked_selection(idx, problem.n, k, f"baseline {method}")
    return SolveResult(
        method=method,
        status=Status.FEASIBLE,
        selected=sel,
        ids=tuple(problem.ids_of(sel)),
        objectives=evaluate(problem, sel),
        seconds=time.perf_counter() - t0,
        param=param,
        backend="heuristic",
    )


class Selector:
    """Callable ``(round_stats, k) -> ids``; see the module docstring for the attributes.

    Attributes:
        spec: the typed spec the selector was built from (its information model, if any, is
            the driver's to run: ``spec.information``).
        label: ``spec`` without the information model (:attr:`Spec.selector_spec`), as
            messages name the selector.
        evaluator: ``ids -> (U, U_d)`` of the true aggregate (set by the training loop when
            ``verify`` is on).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.selectors import Selector, make_selector
        >>> pick = make_selector("eps:1")
        >>> isinstance(pick, Selector), pick
        (True, Selector('eps:1', seed=0))
        >>> pick(example_stats(), 5)  # round 2; no selection has a gap <= 1 point
        ['svhn-0', 'svhn-1', 'syn-2', 'svhn-3', 'svhn-4']
        >>> str(pick.last.status), round(pick.last.objectives["gap"], 2)
        ('optimal', 17.35)
        >>> pick.fallback
        'eps:1: infeasible (...); fell back to the smallest-gap point (gap 17.3529 pp, ...)'
    """

    #: what a baseline rule reads of the clients (``Baseline.reads``); None: a formulation or
    #: a plain callable, which read the round's statistics table
    reads = None
    #: what a rule's probe pass reports, and the numbers each probed client uploads
    reports: tuple[str, ...] = ("loss",)
    probe_floats = 0

    def __init__(self, spec: Spec, *, seed: int = 0, aggregation_q: float | None = None) -> None:
        self.spec = spec
        self.label = spec.selector_spec
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.aggregation_q = aggregation_q
        self.evaluator = None
        self.last: SolveResult | None = None
        self.fallback: str = ""
        self.chosen_aggregation: Aggregation | None = None

    @property
    def surrogate(self) -> str:
        """The surrogate the selector's problem is judged by (``@surrogate``)."""
        return self.spec.surrogate

    @property
    def verify(self) -> int:
        """Candidates measured per round by verified picks (0 = off)."""
        return self.spec.verify

    def __repr__(self) -> str:
        return f"Selector({self.label!r}, seed={self.seed})"

    def state(self) -> dict[str, float]:
        """The run's state after the last round as history columns; {} for a selector that
        keeps none between rounds in columns."""
        return {}

    def load_state(self, columns) -> None:
        """Resume from a history row's state columns (a stateless selector ignores them)."""

    def aggregation_weights(self, problem: SelectionProblem, ids) -> dict[str, float] | None:
        """The picks' weights in the aggregate (summing to 1): the spec's ``agg=`` when it
        names one (:mod:`selection.aggregation`), with ``agg=best`` the rule chosen with the
        last selection (:attr:`chosen_aggregation`); None otherwise (the trainer's sample
        weights; a baseline rule answers with its authors' weights)."""
        return self._spec_weights(problem, ids)

    def _spec_weights(self, problem: SelectionProblem, ids) -> dict[str, float] | None:
        from selection.aggregation import AggregationChoice, pick_weights

        kind = self.spec.aggregation
        if kind is AggregationChoice.BEST:
            kind = self.chosen_aggregation
        return None if kind is None else pick_weights(kind, problem, ids)

    def __call__(self, round_stats: pd.DataFrame, k: int, logits=None) -> list[str]:
        """Choose ``k`` clients of the last round of ``round_stats``; return their ids.

        ``logits``: the round's :class:`~selection.logits.ValidationLogits` (the ``ensemble``
        surrogate needs them).
        """
        problem = SelectionProblem.from_stats(
            round_stats, k, surrogate=self.surrogate, logits=logits
        )
        return self.choose(problem)

    def choose(self, problem: SelectionProblem) -> list[str]:
        """Choose ``problem.k`` clients of an already built problem; return their ids.

        The problem is judged by this selector's surrogate (rebuilt if it carries another).
        """
        problem = problem.with_surrogate(self.surrogate)
        self.fallback = ""
        self.chosen_aggregation = None
        result = self._choose(problem)
        if not result.ok:
            t0 = time.perf_counter()
            eps = getattr(self, "_eps", 0.0) or 0.0
            # only an infeasible ε proves that every selection's gap exceeds it
            point = self._min_gap(problem, eps if result.status == Status.INFEASIBLE else 0.0)
            self.fallback = (
                f"{self.label}: {result.status} ({result.message or 'no selection'}); fell back to "
                f"the smallest-gap point (gap {point.objectives['gap']:.4f} pp, "
                f"U {point.objectives['utility']:.2f}%; {point.message})"
            )
            seconds = result.seconds + time.perf_counter() - t0
            result = replace(point, seconds=seconds, message=self.fallback)
        self.last = result
        return list(result.ids)

    def _choose(self, problem: SelectionProblem) -> SolveResult:
        raise NotImplementedError

    def _min_gap(self, problem: SelectionProblem, infeasible_eps: float) -> SolveResult:
        """The fallback: the smallest-gap point, with ``agg=best`` the smallest-gap pair."""
        from selection.aggregation import AggregationChoice

        if self.spec.aggregation is not AggregationChoice.BEST:
            return min_gap_point(problem, infeasible_eps)
        from selection.aggregation_choice import family_of, joint_min_gap

        point = joint_min_gap(problem, infeasible_eps, family_of(self.spec.formulation, problem))
        self.chosen_aggregation = point.rule
        return point.result


class _SolverSelector(Selector):
    def __init__(self, spec: Spec, make: Callable[[int], Solver], *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self._make = make
        solver = make(0)  # validate the parameters now
        self._eps = getattr(solver, "gap_bound", None)  # infeasible: every gap exceeds it
        if self.verify and not hasattr(solver, "candidates"):
            raise SelectionError(f"{self.label}: {solver.name} has no candidates to verify")
        #: a formulation with a run's state (``Solver.stateful``: the long-term queues) is one
        #: instance for the whole run; the others are built afresh each round
        self._solver = solver if getattr(solver, "stateful", False) else None

    def state(self) -> dict[str, float]:
        """The run's state after the last round, as history columns (``lt_Q_<domain>``)."""
        return self._solver.state() if self._solver is not None else {}

    def load_state(self, columns) -> None:
        """Resume a stateful formulation from a history row's state columns."""
        if self._solver is not None:
            self._solver.load_state(columns)

    def _choose(self, problem: SelectionProblem) -> SolveResult:
        seed = int(self.rng.integers(2**31 - 1))
        solver = self._solver if self._solver is not None else self._make(seed)
        if self.verify:
            if self.evaluator is None:
                raise SelectionError(
                    f"{self.label}: verified picks need the oracle's evaluate_aggregate (run it "
                    "in training, where the loop supplies it)"
                )
            from selection.verify import verified_solve

            return verified_solve(solver, problem, self.verify, self.evaluator)
        from selection.aggregation import AggregationChoice

        if self.spec.aggregation is AggregationChoice.BEST:  # the pair (S, w)
            from selection.aggregation_choice import choose_jointly

            choice = choose_jointly(solver, problem)
            self.chosen_aggregation = choice.rule
            return choice.result
        return solver.solve(problem)


class CallableSelector(Selector):
    """A plain callable ``(round_stats, k) -> ids`` as a :class:`Selector`, wrapped once where
    a run is planned, so that a round asks every selector the same things (no surrogate of
    its own: the default; no state; the trainer's sample weights).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.selectors import as_selector
        >>> def first(table, k):
        ...     return list(table["client_id"][:k])
        >>> pick = as_selector(first)
        >>> pick, pick.reads, pick.state(), pick.surrogate
        (CallableSelector('first'), None, {}, 'mean')
        >>> pick(example_stats().query("round == 2"), 2)
        ['mnist-0', 'usps-0']
        >>> as_selector(pick) is pick
        True
    """

    def __init__(self, fn: Callable[[pd.DataFrame, int], Sequence[str]], name: str | None = None):
        label = name or getattr(fn, "__name__", None) or type(fn).__name__
        super().__init__(Spec(name=str(label)))
        self.fn = fn

    def __repr__(self) -> str:
        return f"CallableSelector({self.label!r})"

    def __call__(self, round_stats: pd.DataFrame, k: int, logits=None) -> list[str]:
        return [str(c) for c in self.fn(round_stats, k)]

    def choose(self, problem: SelectionProblem) -> list[str]:
        """The callable's answer on the problem's table (its ids as given: checked by the
        round)."""
        return [str(c) for c in self.fn(problem.table, problem.k)]


def as_selector(selector: Selector | Callable, name: str | None = None) -> Selector:
    """``selector`` itself, or a plain callable wrapped as a :class:`CallableSelector`.

    Examples:
        >>> from selection.selectors import as_selector, make_selector
        >>> rule = make_selector("proportional")
        >>> as_selector(rule) is rule, as_selector(lambda table, k: [], name="none").label
        (True, 'none')
    """
    if isinstance(selector, Selector):
        return selector
    if not callable(selector):
        raise SelectionError(f"selector {selector!r} is neither a Selector nor callable")
    return CallableSelector(selector, name)


class _RuleSelector(Selector):
    """A registered baseline rule (:mod:`selection.baselines`) as a selector."""

    def __init__(self, spec: Spec, rule, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed, aggregation_q=rule.aggregation_q())
        self._rule = rule
        self.rule = rule.name
        #: what the rule reads of the clients (``Baseline.reads``) and uploads per probe
        self.reads = rule.reads
        self.probe_floats = rule.probe_floats
        self.reports = rule.reports

    def aggregation_weights(self, problem: SelectionProblem, ids) -> dict[str, float] | None:
        """The spec's ``agg=`` weights when it names them (an ablation, e.g.
        ``oort:0.9@agg=samples``), else the rule's own as its authors aggregate
        (``Baseline.aggregation_weights``: 1/K for Oort, power-of-choice, FedCor, clustered
        sampling; None for sample weights, or q-FFL's through ``aggregation_q``)."""
        forced = self._spec_weights(problem, ids)
        return forced if forced is not None else self._rule.aggregation_weights(problem, ids)

    def probed_ids(self, problem: SelectionProblem) -> list[str]:
        """Ids of the clients whose probe pass the last choice read."""
        picked = np.array(self.last.selected if self.last else (), dtype=np.int64)
        return [str(problem.ids[i]) for i in self._rule.probed_by(problem.n, picked)]

    def _choose(self, problem: SelectionProblem) -> SolveResult:
        t0 = time.perf_counter()
        idx = self._rule.pick(problem, self.rng)
        return _result(problem, idx, self.rule, self.label, t0)


# spec aliases: name -> (solver, keyword the argument fills)
def _new_solver(cls, kw: dict, seeded: bool, seed: int):
    """A formulation's solver for one round (its own seed where it takes one)."""
    return cls(**kw, **({"seed": seed} if seeded else {}))


def make_selector(spec: str | Spec, *, seed: int = 0) -> Selector:
    """Build a selector from its spec, typed or a string (see the module docstring).

    Solver-backed specs (``name:arg``) are read by the registered solver's
    :meth:`~selection.solvers.base.Solver.spec_kwargs`, so a newly registered formulation is a
    selector without further code.

    Args:
        spec: a :class:`Spec`, or its text (parsed here), e.g. ``eps:5``, ``maxmin:2``,
            ``weighted:1,0,0``, ``nsga2:knee``, ``random``.
        seed: seed of the selector's own random generator.

    Raises:
        SelectionError: unknown or malformed spec (one line: the offending part, the
            selector's form, a did-you-mean where one is close; ``fedsel methods`` lists every form).

    Examples:
        >>> from selection.example import example_stats
        >>> stats = example_stats()
        >>> pick = make_selector("maxmin:2", seed=0)  # a callable: round's stats, K -> client ids
        >>> sorted(pick(stats[stats["round"] == 2], 5))
        ['mnist-0', 'mnist-1', 'mnist-3', 'svhn-0', 'svhn-3']
    """
    from selection.solvers.base import solver_options

    parsed = spec if isinstance(spec, Spec) else parse_spec(spec)
    text = parsed.selector_spec
    name, arg = parsed.name, (parsed.arg or "")
    has_arg = parsed.arg is not None
    try:
        cls = parsed.formulation  # the registered class, looked up once per spec
        if issubclass(cls, Solver):
            key = ALIASES.get(name, (name, None))[1]
            if key is not None:
                if not has_arg:
                    raise bad_spec(text, f"{name} needs comma-separated weights, e.g. {name}:1,0,0")
                kw = {key: arg}
            else:
                kw = cls.spec_kwargs(arg if has_arg else None)
            seeded = "seed" in solver_options(cls)
            # a partial, not a lambda: a selector pickles (fedsel train --resume keeps it)
            return _SolverSelector(parsed, partial(_new_solver, cls, kw, seeded), seed=seed)
        # a baseline rule (Spec.formulation holds no third kind)
        if parsed.verify:
            raise bad_spec(text, f"verify needs a formulation; {name} is a baseline rule")
        if parsed.surrogate != DEFAULT_SURROGATE:
            raise bad_spec(
                text,
                f"{name} is a baseline rule: it reads no surrogate of U(S) (a surrogate "
                "modifier applies to formulations)",
            )
        rule = cls
        if rule.arg is None:
            if has_arg:
                raise bad_spec(text, f"{name} takes no argument")
            return _RuleSelector(parsed, rule(text), seed=seed)
        if not has_arg:
            raise bad_spec(text, f"{name} needs a value, e.g. {name}:{rule.arg_example}")
        if rule.choices:
            if arg not in rule.choices:
                hint = did_you_mean(arg, rule.choices)
                raise bad_spec(text, f"{rule.arg} is one of {', '.join(rule.choices)}{hint}")
            return _RuleSelector(parsed, rule(text, arg), seed=seed)
        value = spec_number(text, arg, integer=rule.integer)
        if value < rule.minimum:
            raise bad_spec(text, f"{rule.arg} must be at least {rule.minimum:g}")
        return _RuleSelector(parsed, rule(text, value), seed=seed)
    except SelectionError as exc:
        if str(exc).startswith("bad selector spec"):
            raise
        raise bad_spec(text, str(exc)) from None
    except ValueError as exc:
        raise bad_spec(text, str(exc)) from None
