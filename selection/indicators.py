"""Quality indicators of approximate Pareto fronts: non-dominance, hypervolume, IGD, the
additive ε-indicator.

Every computation goes through moocore; this module only fixes the conventions so that all
methods are judged the same way:

* **Objective senses** come from the objective table :data:`selection.objectives.OBJECTIVES`
  (``utility``/``worst``/``sum_Fz``/``sum_cos`` up, ``gap``/``mean_minus_worst``/``var_d``/
  ``sum_B`` down). A point is a row of
  objective values in their natural units (accuracy %, percentage points, ...).
* **One normalization.** :class:`Normalization` maps each objective linearly onto a
  minimization scale where 0 is the ideal and 1 the nadir value. Ideal and nadir come from the
  payoff table, read off the *reference front*'s extremes: with two objectives the front's two
  end points are the lexicographic individual optima, so each objective's best value over the
  front is its optimum (ideal) and its worst value over the front is what the other objective's
  optimum concedes (nadir) — exactly the payoff table. With three or more objectives the front's
  worst values are used as the nadir (at least as wide as the payoff table's). Every method of
  a comparison is measured with that one mapping (:meth:`Normalization.from_front`).
* **One reference point**: ``REF_POINT = 1.1`` in every normalized coordinate.
* **Reference front**: the exact front when exhaustive enumeration is feasible, otherwise the
  non-dominated union of every method's points (:func:`reference_front`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import moocore
import numpy as np

from selection.errors import SelectionError
from selection.objectives import maximise_mask

__all__ = [
    "REF_POINT",
    "Normalization",
    "maximise_mask",
    "nondominated_mask",
    "nondominated",
    "reference_front",
    "hypervolume",
    "hypervolume_ratio",
    "igd",
    "epsilon_indicator",
    "on_front_count",
]

REF_POINT = 1.1
DEFAULT_OBJECTIVES: tuple[str, ...] = ("utility", "gap")


def _points(points, m: int) -> np.ndarray:
    P = np.asarray(points, dtype=float)
    if P.ndim == 1:
        P = P.reshape(-1, m) if P.size else np.empty((0, m))
    if P.ndim != 2 or P.shape[1] != m:
        raise SelectionError(f"points must have shape (n, {m}), got {P.shape}")
    if not np.isfinite(P).all():
        raise SelectionError("points contain NaN or inf")
    return P


def nondominated_mask(
    points,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    *,
    maximise: bool | np.ndarray | None = None,
    keep_weakly: bool = False,
) -> np.ndarray:
    """True for rows no other row dominates, shape (n,): fedsel's one non-dominance filter.

    Args:
        points: shape (n, m), finite.
        objectives: the m objective names, whose senses apply (when ``maximise`` is None).
        maximise: senses given directly instead (a bool for all columns, or shape (m,)).
        keep_weakly: keep every copy of a duplicated non-dominated row (default: the first).

    Examples:
        >>> from selection.indicators import nondominated_mask
        >>> points = [[80.0, 10.0], [75.0, 4.0], [70.0, 12.0], [70.0, 1.0]]  # (utility, gap)
        >>> nondominated_mask(points).tolist()  # (70, 12): lower U and larger gap than (80, 10)
        [True, True, False, True]
        >>> nondominated_mask(points, maximise=True).tolist()  # both columns maximized
        [True, False, True, False]
    """
    if maximise is None:
        mx = maximise_mask(objectives)
        P = _points(points, len(mx))
    else:
        P = np.asarray(points, dtype=float)
        P = _points(P, P.shape[1] if P.ndim == 2 else len(objectives))
        mx = np.broadcast_to(np.asarray(maximise, dtype=bool), (P.shape[1],))
    if len(P) == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(moocore.is_nondominated(P, maximise=mx, keep_weakly=keep_weakly), dtype=bool)


def nondominated(points, objectives: Sequence[str] = DEFAULT_OBJECTIVES) -> np.ndarray:
    """The non-dominated rows of ``points`` (duplicates removed), shape (n', m).

    Examples:
        >>> from selection.indicators import nondominated
        >>> points = [[80.0, 10.0], [70.0, 12.0], [75.0, 4.0], [80.0, 10.0]]
        >>> nondominated(points).tolist()  # max utility, min gap
        [[80.0, 10.0], [75.0, 4.0]]
        >>> nondominated([[80, 60], [75, 70], [70, 65]], ("utility", "worst")).tolist()
        [[80.0, 60.0], [75.0, 70.0]]
    """
    P = _points(points, len(objectives))
    return P[nondominated_mask(P, objectives)]


def reference_front(
    point_sets: Sequence[np.ndarray],
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    exact=None,
) -> np.ndarray:
    """The front every method is measured against.

    Args:
        point_sets: each method's points, shapes (n_j, m).
        objectives: names of the m columns.
        exact: the exact front when it is known (exhaustive enumeration), shape (n, m).

    Returns:
        ``exact`` (filtered) when given, else the non-dominated union of ``point_sets``.

    Examples:
        >>> from selection.indicators import reference_front
        >>> a = [[80.0, 10.0], [70.0, 12.0]]  # one method's (utility, gap) points
        >>> b = [[75.0, 4.0], [70.0, 1.0]]  # another's
        >>> reference_front([a, b]).tolist()  # (70, 12) is dominated
        [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]
        >>> reference_front([a, b], exact=[[80.0, 10.0], [72.0, 0.5]]).tolist()
        [[80.0, 10.0], [72.0, 0.5]]
    """
    m = len(objectives)
    if exact is not None and len(exact):
        return nondominated(exact, objectives)
    sets = [_points(s, m) for s in point_sets if len(s)]
    if not sets:
        raise SelectionError("no points to build a reference front from")
    return nondominated(np.vstack(sets), objectives)


@dataclass(frozen=True)
class Normalization:
    """Linear map onto a minimization scale: ideal -> 0, nadir -> 1 in every coordinate.

    Attributes:
        objectives: the objective names of the columns.
        ideal: best value of each objective, natural units, shape (m,).
        nadir: worst value of each objective on the front, natural units, shape (m,).

    Examples:
        >>> from selection.indicators import Normalization
        >>> front = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]  # (utility %, gap pp)
        >>> norm = Normalization.from_front(front)
        >>> norm.ideal.tolist(), norm.nadir.tolist()  # best U and gap, and their worst
        ([80.0, 1.0], [70.0, 10.0])
        >>> norm.apply([[75.0, 4.0]]).round(3).tolist()  # (80 - 75) / 10, (4 - 1) / 9
        [[0.5, 0.333]]
    """

    objectives: tuple[str, ...]
    ideal: np.ndarray
    nadir: np.ndarray

    @classmethod
    def from_front(cls, front, objectives: Sequence[str] = DEFAULT_OBJECTIVES) -> Normalization:
        """Ideal and nadir read off a (reference) front's extremes (the payoff table)."""
        mx = maximise_mask(objectives)
        F = nondominated(front, objectives)
        if len(F) == 0:
            raise SelectionError("cannot normalize with an empty front")
        ideal = np.where(mx, F.max(axis=0), F.min(axis=0))
        nadir = np.where(mx, F.min(axis=0), F.max(axis=0))
        return cls(tuple(objectives), ideal, nadir)

    def apply(self, points) -> np.ndarray:
        """Normalized minimization coordinates of ``points``, shape (n, m).

        An objective that is constant on the front (ideal == nadir) is scaled by 1 unit.
        """
        P = _points(points, len(self.objectives))
        span = np.abs(self.nadir - self.ideal)
        span = np.where(span > 1e-12, span, 1.0)
        mx = maximise_mask(self.objectives)
        return np.where(mx, self.ideal - P, P - self.ideal) / span


def hypervolume(points, norm: Normalization, ref: float = REF_POINT) -> float:
    """Hypervolume of ``points`` in ``norm``'s space w.r.t. the point (ref, ..., ref).

    Examples:
        >>> from selection.indicators import Normalization, hypervolume
        >>> front = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]  # (utility %, gap pp)
        >>> norm = Normalization.from_front(front)
        >>> round(hypervolume([[75.0, 4.0]], norm), 3)  # (1.1 - 0.5) * (1.1 - 1/3)
        0.46
        >>> round(hypervolume(front, norm), 3)
        0.543
    """
    Z = norm.apply(points)
    if len(Z) == 0:
        return 0.0
    return float(moocore.hypervolume(Z, ref=np.full(Z.shape[1], ref)))


def hypervolume_ratio(
    points,
    reference,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    *,
    norm: Normalization | None = None,
    ref: float = REF_POINT,
) -> float:
    """HV(points) / HV(reference front), both in one normalization (default: from ``reference``).

    Args:
        points: a method's points in natural units, shape (n, m).
        reference: the reference front, shape (r, m).
        objectives: column names; senses from :data:`selection.objectives.OBJECTIVES`.
        norm: normalization to use; default ``Normalization.from_front(reference)``.
        ref: reference point coordinate in normalized space.

    Returns:
        The ratio, 1.0 when ``points`` cover the reference front; may exceed 1 only if
        ``points`` dominate part of the reference front (then it was not exact).

    Examples:
        >>> exact = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]  # (utility %, gap pp)
        >>> round(hypervolume_ratio([[80.0, 10.0], [70.0, 1.0]], exact), 3)
        0.387
    """
    norm = norm or Normalization.from_front(reference, objectives)
    hv_ref = hypervolume(reference, norm, ref)
    if hv_ref <= 0:
        raise SelectionError("reference front has zero hypervolume")
    return hypervolume(points, norm, ref) / hv_ref


def igd(
    points,
    reference,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    *,
    norm: Normalization | None = None,
) -> float:
    """Inverted generational distance of ``points`` to ``reference`` in normalized space.

    Mean over reference points of the Euclidean distance to the nearest of ``points``
    (moocore's IGD); 0 when every reference point is found; inf when ``points`` is empty.

    Examples:
        >>> from selection.indicators import igd
        >>> exact = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]  # (utility %, gap pp)
        >>> igd(exact, exact), igd([], exact)
        (0.0, inf)
        >>> round(igd([[80.0, 10.0], [70.0, 1.0]], exact), 3)  # (75, 4) missed: 0.601 / 3
        0.2
    """
    Z, R = _normalized(points, reference, objectives, norm)
    return float(moocore.igd(Z, ref=R)) if len(Z) else float("inf")


def epsilon_indicator(
    points,
    reference,
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
    *,
    norm: Normalization | None = None,
) -> float:
    """Additive ε-indicator of ``points`` against ``reference`` in normalized space.

    The smallest ε such that every reference point is weakly dominated by some point of
    ``points`` moved by ε towards the ideal in every objective (moocore's
    ``epsilon_additive``): 0 when ``points`` cover the reference front, the worst shortfall
    otherwise (in units of each objective's ideal-to-nadir range); inf when ``points`` is
    empty.

    Examples:
        >>> from selection.indicators import epsilon_indicator
        >>> exact = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]  # (utility %, gap pp)
        >>> epsilon_indicator([[80.0, 10.0], [70.0, 1.0]], exact)  # the middle point missed
        0.5
    """
    Z, R = _normalized(points, reference, objectives, norm)
    return float(moocore.epsilon_additive(Z, ref=R)) if len(Z) else float("inf")


def _normalized(points, reference, objectives, norm) -> tuple[np.ndarray, np.ndarray]:
    """``points`` and ``reference`` in one normalization (default: from ``reference``)."""
    norm = norm or Normalization.from_front(reference, objectives)
    return norm.apply(points), norm.apply(reference)


def on_front_count(points, reference, *, tol: float = 1e-6) -> int:
    """How many distinct rows of ``points`` coincide with a reference-front point.

    Two points coincide when every coordinate differs by at most ``tol`` (natural units).

    Examples:
        >>> from selection.indicators import on_front_count
        >>> exact = [[80.0, 10.0], [75.0, 4.0], [70.0, 1.0]]
        >>> on_front_count([[80.0, 10.0], [74.0, 4.0], [70.0, 1.0], [70.0, 1.0]], exact)
        2
    """
    P = np.asarray(points, dtype=float)
    R = np.asarray(reference, dtype=float)
    if len(P) == 0 or len(R) == 0:
        return 0
    P = np.unique(np.round(P / tol) * tol, axis=0) if tol > 0 else np.unique(P, axis=0)
    close = np.all(np.abs(P[:, None, :] - R[None, :, :]) <= 1.5 * tol, axis=2)
    return int(close.any(axis=1).sum())
