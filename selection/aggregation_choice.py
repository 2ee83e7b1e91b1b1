"""``agg=best``: the picks' aggregation weights chosen jointly with S, by the formulation's own
objective.

A formulation with ``agg=best`` solves over the pairs (S, w): S a K-selection, w one of the
weighting rules of :data:`selection.aggregation.FAMILY` (sample weights, 1/K, domain-balanced),
each pair valued by the surrogate's U_d(S, w) (a surrogate of the aggregate w_t + Σ p_i Δ_i:
``weighted``, ``ensemble``, ``softvote``; :meth:`~selection.surrogates.base.Surrogate.under`).
The family is finite, so the joint problem is one problem per rule and a comparison:

    best over (S, w) = best over w of (the formulation's optimum over S at w),

where the question's reference values are taken over the pairs, not per rule, and each rule
is solved with them: max-min's U* and fisher-fair's worst* are the largest over the rules
(``maxmin:D`` asks max worst(S, w) s.t. U(S, w) >= U*_J − D, U*_J = max_{S,w} U(S, w), so
rule w is solved with δ_w = D − (U*_J − U*(w)), and not at all where that is negative: its
best U stays below the floor); ``eps-rel`` places ε on the range of gaps
over the pairs and asks the ε question per rule. The rules' answers are compared by the
formulation's own key (its ``realized_rule``, as verified picks rank candidates: (U, −gap)
for ε, (worst, U) for max-min, (Σ F_z, U) for fisher-fair; the round's drift-plus-penalty
objective for the long-term ones), then by U(S, w), worst(S, w), and the family's order.

**Exact over the family when each per-rule solve is exact** (enumeration, the MILPs,
Dinkelbach, the top-K sorts): a pair (S, w) feasible for the joint question is feasible for
rule w's solve, which returns one at least as good by the same key; the comparison keeps the
best of those. Above the enumeration limit a black-box rule (domain-balanced weights, or any
rule under ``ensemble``) is answered by local search: the pair is then the best found.
``tests/selection/test_aggregation_choice.py`` checks the pair against an enumeration of
every (S, w) on random rounds.

Per formulation (a table by class, :func:`joint_form`):

* ``weighted`` / ``composite``: a sum of per-client scores that no w changes: the same S
  under every rule, w by the tie-break (the highest U(S, w));
* ``eps``, ``eps-rel``, ``maxmin``, ``fisher-fair``: as above;
* ``eps-lt``, ``fisher-lt``: every rule solved from the queues the round starts with,
  compared by V·P(S, w) − Σ_d Q_d (Ū(S, w) − U_d(S, w) − ε), the chosen rule's queue update
  kept; their family is the rules under which the surrogate keeps a structure they take
  (linear or linear-fractional: sample weights and 1/K; domain-balanced weights make a
  weighted mean a black box).

``nsga2`` and ``exhaustive`` (a front, not a point) take no ``agg=best``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from selection.aggregation import FAMILY, Aggregation
from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.eps import EpsSolver, min_gap_point
from selection.solvers.eps_rel import EpsRelSolver
from selection.solvers.fisher_fair import FisherFairSolver
from selection.solvers.long_term import LongTermEpsSolver
from selection.solvers.maxmin import MaxminSolver
from selection.solvers.params import fmt_param
from selection.solvers.result import SolveResult, Status
from selection.solvers.weighted import WeightedSolver

__all__ = ["JointChoice", "choose_jointly", "family_of", "joint_form", "joint_min_gap"]

_R = 9  # decimals at which two rules' values tie (as enumeration compares)
#: after the formulation's key: higher U(S, w), then higher worst(S, w)
TIE_BREAK = (("utility", 1.0), ("worst", 1.0))


@dataclass(frozen=True)
class JointChoice:
    """The pair (S, w) a formulation chose.

    Attributes:
        result: the committed selection's result; its ``objectives`` are predicted under
            the chosen weights, ``message`` names them.
        rule: the chosen weighting rule.
        answers: each rule's answer (the formulation's optimum over S under that rule).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.solvers.maxmin import MaxminSolver
        >>> p = SelectionProblem.from_stats(example_stats(), k=5, surrogate="weighted")
        >>> choice = choose_jointly(MaxminSolver(delta=0.5), p)  # U(S, w) >= U*_J − 0.5
        >>> str(choice.rule), round(choice.result.objectives["worst"], 2)
        ('samples', 48.24)
        >>> {str(r): round(a.objectives["worst"], 2) for r, a in choice.answers.items()}
        {'samples': 48.24, 'uniform': 45.82, 'domain': 45.12}
    """

    result: SolveResult
    rule: Aggregation
    answers: dict[Aggregation, SolveResult]


class _Form:
    """How a formulation's question reads over (S, w): what each rule is asked, how the
    answers compare. Default: the formulation as it is, under every rule."""

    def answers(
        self, solver: Solver, problems: dict[Aggregation, SelectionProblem]
    ) -> dict[Aggregation, SolveResult]:
        return {rule: solver.solve(p) for rule, p in problems.items()}

    def keys(self, solver: Solver, problem: SelectionProblem, table: dict) -> list:
        """The formulation's lexicographic key ((objective, +1 max / −1 min), ...)."""
        rank = getattr(solver, "realized_rule", None)
        return list(rank(problem, table)[1]) if rank is not None else []

    def commit(self, solver: Solver, rule: Aggregation) -> None:
        """Keep what the chosen rule's solve left in the solver (its state)."""


class _Floor(_Form):
    """A question whose floor is relative to a reference value over the selections (U* of
    max-min, worst* of fisher-fair): the reference taken over the pairs, each rule solved
    with its parameter moved so that its floor is the joint one."""

    def __init__(self, objective: str, reference: Callable[[], Solver]) -> None:
        self.objective, self.reference = objective, reference

    def answers(self, solver, problems):
        ref = {}
        for rule, p in problems.items():
            top = self.reference().solve(p)
            if top.ok:
                ref[rule] = float(top.objectives[self.objective])
        if not ref:
            return {}
        joint = max(ref.values())
        delta = float(getattr(solver, solver.param))
        out = {}
        for rule, r in ref.items():
            own_delta = delta - (joint - r)  # the floor joint − δ is own reference − own_delta
            if own_delta < 0:  # the rule's best stays below the joint floor: no pair of it
                continue
            own = solver if math.isinf(delta) else solver.with_param(own_delta)
            out[rule] = dataclasses.replace(
                own.solve(problems[rule]), param=fmt_param(solver.param, delta)
            )
        return out


class _EpsRel(_Form):
    """ε at α of the gap range over the pairs: the smallest gap of any pair, the gap of the
    best pair by (U, −gap); then the ε question under every rule."""

    def answers(self, solver, problems):
        tops = {rule: EpsSolver().solve(p) for rule, p in problems.items()}
        tops = {rule: r for rule, r in tops.items() if r.ok}
        if not tops:
            return {}
        top = tops[_best(tops, [("utility", 1.0), ("gap", -1.0)])]
        g_top = float(top.objectives["gap"])
        g_min = min(
            float(min_gap_point(p, highest_u=False).objectives["gap"]) for p in problems.values()
        )
        alpha = float(getattr(solver, solver.param))
        eps = g_min + alpha * (g_top - g_min) + 1e-9
        self.keys_of = EpsSolver(eps=eps)
        msg = f"eps={eps:.6g} in [{g_min:.6g}, {g_top:.6g}] over the weightings"
        return {
            rule: dataclasses.replace(
                self.keys_of.solve(p),
                method=solver.name,
                param=fmt_param(solver.param, alpha),
                message=msg,
            )
            for rule, p in problems.items()
        }

    def keys(self, solver, problem, table):
        return list(self.keys_of.realized_rule(problem, table)[1])


class _LongTerm(_Form):
    """The round's drift-plus-penalty objective from the queues it starts with; each rule
    solved from those queues, the chosen rule's update kept."""

    def answers(self, solver, problems):
        start = solver.state()
        self.queues = dict(solver.queues)
        self.after, out = {}, {}
        for rule, p in problems.items():
            solver.load_state(start)
            out[rule] = solver.solve(p)
            self.after[rule] = solver.state()
        solver.load_state(start)
        self.problems = problems
        return out

    def value(self, solver, rule: Aggregation, result: SolveResult) -> float:
        """V·P(S, w) − Σ_d Q_d (Ū(S, w) − U_d(S, w) − ε) of one rule's answer."""
        p = self.problems[rule]
        idx = np.asarray(result.selected, dtype=np.int64)
        sur = p.surrogate_model
        weights = sur.pick_weights(p, idx[None, :])[0]
        values = solver.penalty_values(p, np.asarray(sur.client_values(p)[0], dtype=float))
        ud = np.array([result.objectives[f"U_{d}"] for d in p.domains])
        q = np.array([self.queues.get(d, 0.0) for d in p.domains])
        return float(solver.V * weights @ values[idx] - q @ (ud.mean() - ud - solver.eps))

    def keys(self, solver, problem, table):
        return [("drift_plus_penalty", 1.0)]

    def commit(self, solver, rule):
        solver.load_state(self.after[rule])


#: formulation class -> how its question reads over (S, w) (subclasses inherit; the
#: long-term Fisher variant is the long-term ε's)
_FORMS: dict[type, Callable[[], _Form]] = {
    WeightedSolver: _Form,
    EpsSolver: _Form,
    EpsRelSolver: _EpsRel,
    MaxminSolver: lambda: _Floor("utility", EpsSolver),
    FisherFairSolver: lambda: _Floor("worst", lambda: MaxminSolver(delta=math.inf)),
    LongTermEpsSolver: _LongTerm,
}


def joint_form(cls: type) -> Callable[[], _Form] | None:
    """How the formulation ``cls`` chooses its weights with ``agg=best`` (None: it cannot).

    Examples:
        >>> from selection.solvers.registry import solvers
        >>> [name for name, cls in solvers().items() if joint_form(cls) is not None]
        ['weighted', 'eps', 'eps-rel', 'maxmin', 'fisher-fair', 'eps-lt', 'fisher-lt']
    """
    for klass in getattr(cls, "__mro__", ()):
        if klass in _FORMS:
            return _FORMS[klass]
    return None


def family_of(cls: type, problem: SelectionProblem) -> tuple[Aggregation, ...]:
    """The rules of :data:`FAMILY` the formulation ``cls`` can be asked under on ``problem``:
    those under which the surrogate keeps a structure it takes (``surrogate_structures``).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.solvers.registry import solvers
        >>> p = SelectionProblem.from_stats(example_stats(), k=5, surrogate="weighted")
        >>> [str(r) for r in family_of(solvers()["eps"], p)]
        ['samples', 'uniform', 'domain']
        >>> [str(r) for r in family_of(solvers()["eps-lt"], p)]  # takes no black box
        ['samples', 'uniform']
    """
    allowed = tuple(getattr(cls, "surrogate_structures", ()) or ())
    model = problem.surrogate_model
    return tuple(r for r in FAMILY if not allowed or model.under(r).structure in allowed)


def _best(answers: dict[Aggregation, SolveResult], keys, extra: dict | None = None) -> Aggregation:
    """The rule whose answer is best by ``keys`` (ties at 1e-9: the earlier rule)."""
    rules = list(answers)
    cand = np.arange(len(rules))
    for name, sign in keys:
        col = (extra or {}).get(name)
        v = np.array(
            [col[r] if col is not None else answers[r].objectives[name] for r in rules], float
        )
        v = np.round(v[cand], _R) * sign
        cand = cand[v == v.max()]
    return rules[int(cand[0])]


def choose_jointly(solver: Solver, problem: SelectionProblem) -> JointChoice:
    """Solve ``solver``'s question over the pairs (S, w), w in its :func:`family_of`.

    Args:
        solver: a formulation :func:`joint_form` knows (SelectionError otherwise).
        problem: the round, judged by a surrogate that models the aggregate.

    Returns:
        The chosen pair; where no rule has an answer (an ε every pair's gap exceeds), the
        result is the sample-weights rule's (status infeasible or as the solver said).

    Examples:
        >>> from selection.example import example_stats
        >>> from selection.solvers.eps import EpsSolver
        >>> p = SelectionProblem.from_stats(example_stats(), k=5, surrogate="weighted")
        >>> choice = choose_jointly(EpsSolver(), p)  # max U(S, w): no bound on the gap
        >>> {str(r): round(a.objectives["utility"], 2) for r, a in choice.answers.items()}
        {'samples': 69.26, 'uniform': 68.94, 'domain': 69.39}
        >>> str(choice.rule), choice.result.ids  # USPS's one client: half of the aggregate
        ('domain', ('mnist-0', 'mnist-1', 'mnist-2', 'mnist-3', 'usps-3'))
        >>> choice.result.message
        'agg=best: weights domain (of samples, uniform, domain)'
    """
    t0 = time.perf_counter()
    make = joint_form(type(solver))
    if make is None:
        raise SelectionError(
            f"agg=best: {solver.name} cannot rank its answers over the weights; "
            f"{', '.join(joint_formulations())} can"
        )
    form = make()
    rules = family_of(type(solver), problem)
    problems = {rule: problem.with_aggregation(rule) for rule in rules}
    answers = form.answers(solver, problems)
    ok = {rule: r for rule, r in answers.items() if r.ok}
    if not ok:
        first = answers.get(rules[0]) or SolveResult(solver.name, Status.INFEASIBLE)
        seconds = time.perf_counter() - t0
        return JointChoice(dataclasses.replace(first, seconds=seconds), rules[0], answers)
    table = {
        name: np.array([r.objectives.get(name, math.nan) for r in ok.values()])
        for name in next(iter(ok.values())).objectives
    }
    extra = {}
    if isinstance(form, _LongTerm):
        extra["drift_plus_penalty"] = {rule: form.value(solver, rule, r) for rule, r in ok.items()}
    rule = _best(ok, [*form.keys(solver, problem, table), *TIE_BREAK], extra)
    form.commit(solver, rule)
    chosen = ok[rule]
    bounds = [answers[r].bound for r in rules if r in answers]
    bound = max(bounds) if len(bounds) == len(rules) and np.all(np.isfinite(bounds)) else math.nan
    note = f"agg=best: weights {rule} (of {', '.join(rules)})"
    result = dataclasses.replace(
        chosen,
        seconds=time.perf_counter() - t0,
        bound=float(bound),
        message=f"{chosen.message}; {note}" if chosen.message else note,
    )
    return JointChoice(result, rule, answers)


def joint_min_gap(
    problem: SelectionProblem, infeasible_eps: float, rules: tuple[Aggregation, ...] = FAMILY
) -> JointChoice:
    """The smallest-gap pair (highest U(S, w) on ties): the fallback of an ε no pair meets,
    :func:`~selection.solvers.eps.min_gap_point` under each rule.

    Examples:
        >>> from selection.example import example_stats
        >>> p = SelectionProblem.from_stats(example_stats(), k=5, surrogate="weighted")
        >>> point = joint_min_gap(p, 0.0)
        >>> str(point.rule), round(point.result.objectives["gap"], 2)
        ('samples', 12.56)
    """
    answers = {r: min_gap_point(problem.with_aggregation(r), infeasible_eps) for r in rules}
    ok = {r: a for r, a in answers.items() if a.ok}
    if not ok:
        return JointChoice(answers[rules[0]], rules[0], answers)
    rule = _best(ok, [("gap", -1.0), ("utility", 1.0)])
    return JointChoice(ok[rule], rule, answers)


def joint_formulations() -> tuple[str, ...]:
    """The registered formulations that take ``agg=best``, as messages name them.

    Examples:
        >>> joint_formulations()[:4]
        ('weighted', 'eps', 'eps-rel', 'maxmin')
    """
    from selection.solvers.registry import solvers

    return tuple(name for name, cls in solvers().items() if joint_form(cls) is not None)
