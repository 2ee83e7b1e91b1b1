"""Claims a node makes, bounded: its size against its declaration or the others', its update's
norm against the round's.

A Flower node reports its own ``num-examples`` and returns its own update; the strategy weights
the aggregate by the first and adds the second, so one node that claims 10⁹ examples, or
returns a scaled update, would take the model. Nothing here is taken on trust:

* **sizes**: where the deployment declares each client's size (``declared_sizes``), a claim
  above it is capped to it. Otherwise each claim is judged on the log scale against every
  *other* size the federation has reported (robust z-score: median and 1.4826·MAD, the claim
  itself left out so that it cannot move its own fence; Digits-4's two size clusters would let
  one huge claim shift the median from one to the other): one above the upper fence is capped
  to the largest of the others within it. The fence is at least 10× the others' median
  (``FLOOR``), so a federation of equal sizes still admits ordinary variation; Digits-4's sizes
  (72–732) put it near 43,000.
* **update norms**: ‖Δ_i‖ judged the same way against the round's other updates; an outlier is
  named, and with ``clip`` scaled down to the largest of the others' norms within the fence
  (norm bounding, the defence of Sun et al., 2019, "Can you really backdoor federated
  learning?").

* **statistics against the update**: a node's ``F`` is the mean squared per-sample gradient
  norm at the model it was sent, w_t. Its update is ``steps`` SGD steps of size ``lr`` from
  w_t (the server sent ``lr``; FedProx's proximal term only pulls back towards w_t), so
  ‖Δ‖ ≤ lr · Σ_s ‖g_s‖, and at w_t each mini-batch gradient has ‖g‖² ≤ the batch's mean
  squared per-sample norm (Jensen), whose expectation is F. The ratio
  ρ = ‖Δ‖ / (lr · steps · √F) is therefore about 1 or below while the path's gradients stay
  near w_t's; honest fedsel clients measure ρ ≤ 0.5 (tiny and default Digits-4 federations,
  ``RHO_MAX``'s comment). A reply with ρ > ``RHO_MAX`` reports an F for a model it did not train
  at (or an update it did not compute from w_t) and is refused with the numbers. Where the
  deployment declares the step plan (``max_steps``), a ``steps`` claim beyond it is refused
  too, so that no node explains a large update by steps it did not take. Nodes that do not
  report ``steps`` (stock apps, whose optimiser the server does not know) are not judged here.
* **the model the statistics are for**: fedsel's ClientApp and ``fedsel_stats_mod`` echo
  ``model-sha``, :func:`model_fingerprint` of the weights they computed F and the loss at;
  a fingerprint other than this round's w_t (a replayed or cached reply) is refused.

:class:`ClaimGuard` bounds sizes and update norms; :class:`ReplyGuard` applies every check above
to an exchange's replies for the strategy and keeps the round's suspects. Who was capped or
clipped, and why, is returned per client: the strategy names them once per round in the history
(``suspects``) and in the statistics table the selector reads (``suspect``), so nothing a node
claimed beyond the bounds reaches the selector or the aggregate unflagged. Identity claims (a
partition id another node holds, or a node changing partitions) are refused where the replies
are parsed (:mod:`.probe`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from fl_oracle.experiments.flower.codec import Reply

__all__ = [
    "FLOOR",
    "RHO_MAX",
    "Z_MAX",
    "ClaimGuard",
    "ReplyGuard",
    "contradiction",
    "model_fingerprint",
    "upper_fence",
]

Z_MAX = 3.5  # robust z-score above which a claim is an outlier (Iglewicz & Hoaglin's 3.5)
FLOOR = math.log(10.0) / Z_MAX  # the smallest spread assumed: the fence is >= 10x the median
# ρ above which F contradicts the update: 4x the largest honest ρ measured (0.5; benchmarks/
# flower_consistency.py -> results/benchmarks/flower_consistency.md), far below what a scaled
# update gives (x100: ρ ~ 30)
RHO_MAX = 2.0


def model_fingerprint(flat: np.ndarray) -> str:
    """The first 16 hex digits of the SHA-256 of a model's float32 weights, flattened."""
    data = np.ascontiguousarray(np.asarray(flat, dtype=np.float32).ravel())
    return hashlib.sha256(data.tobytes()).hexdigest()[:16]


def contradiction(
    norm: float, F: float, steps: int, lr: float, max_steps: int | None = None
) -> str | None:
    """Why an update of norm ``norm`` after ``steps`` SGD steps at ``lr`` cannot come from a
    model whose Fisher trace is ``F`` (module text), or None when they agree."""
    if max_steps is not None and steps > max_steps:
        return f"claimed {steps:,} local steps, the plan allows {max_steps:,}"
    if norm == 0.0:
        return None
    if steps < 1:
        return f"an update of norm {norm:.3g} after {steps} local steps"
    rho = norm / (lr * steps * math.sqrt(F)) if F > 0 else math.inf
    if rho > RHO_MAX:
        return (
            f"F={F:.3g} contradicts its update: norm {norm:.3g} after {steps} steps at lr "
            f"{lr:g} needs gradients {rho:.3g}x sqrt(F) (at most {RHO_MAX:g})"
        )
    return None


def upper_fence(values) -> float | None:
    """exp(median + Z_MAX · max(1.4826·MAD, FLOOR)) of log(values); None below 3 values."""
    v = np.log(np.asarray([x for x in values if x > 0], dtype=float))
    if v.size < 3:
        return None
    med = float(np.median(v))
    spread = max(1.4826 * float(np.median(np.abs(v - med))), FLOOR)
    return float(math.exp(med + Z_MAX * spread))


class ClaimGuard:
    """Bounds the sizes and updates nodes report (see the module text).

    Args:
        declared_sizes: each client id's known size (the partition), or None.
        clip: scale an outlying update down to the largest norm within the fence.
    """

    def __init__(self, declared_sizes: Mapping[str, int] | None = None, clip: bool = False):
        self.declared = None
        if declared_sizes is not None:
            self.declared = {str(c): int(n) for c, n in declared_sizes.items()}
            bad = [c for c, n in self.declared.items() if n < 1]
            if bad:
                raise ValueError(f"declared_sizes: {bad[0]} has a size below 1")
        self.clip = bool(clip)

    def sizes(
        self, claims: Mapping[str, int], known: Mapping[str, int]
    ) -> dict[str, tuple[int, str]]:
        """The claims to cap: client id -> (accepted size, why).

        ``claims``: this exchange's sizes by client id; ``known``: the other clients' accepted
        sizes (their latest reports)."""
        out: dict[str, tuple[int, str]] = {}
        rest = dict(claims)
        if self.declared is not None:
            for c, n in claims.items():
                if c in self.declared:
                    rest.pop(c)
                    if n > self.declared[c]:
                        out[c] = (
                            self.declared[c],
                            f"claimed {n:,} examples, declared {self.declared[c]:,}",
                        )
        pool = {**known, **rest}
        fence = upper_fence(pool.values())
        if fence is None:
            return out
        within = [n for n in pool.values() if n <= fence]
        for c, n in rest.items():
            if n > fence and within:
                cap = max(within)
                out[c] = (
                    cap,
                    f"claimed {n:,} examples, beyond the others' (fence {fence:,.0f}; capped to {cap:,})",
                )
        return out

    def updates(self, deltas: Mapping[str, np.ndarray]) -> dict[str, tuple[float, str]]:
        """The outlying updates: client id -> (scale applied, why); scale 1.0 unless ``clip``."""
        norms = {c: float(np.linalg.norm(d)) for c, d in deltas.items()}
        out: dict[str, tuple[float, str]] = {}
        for c, x in norms.items():
            others = [y for o, y in norms.items() if o != c]
            fence = upper_fence(others)
            within = [y for y in others if fence is not None and y <= fence]
            if fence is not None and x > fence and within:
                bound = max(within)
                scale = bound / x if self.clip else 1.0
                what = f"clipped to {bound:.3g}" if self.clip else "not clipped (clip_updates off)"
                out[c] = (
                    scale,
                    f"update norm {x:.3g}, beyond the round's (fence {fence:.3g}); {what}",
                )
        return out


class ReplyGuard:
    """The strategy's checks of an exchange's replies (see the module text): refuses those whose
    statistics contradict their update or answer another model than the round's, caps outlying
    sizes and names (with ``clip`` clips) outlying updates; the reasons are the round's
    ``suspects``.

    Args:
        claims: the bounds on sizes and update norms.
        lr: the learning rate the server sends (None: F is not judged against the update).
        max_steps: ``(client id, accepted size) -> the local steps its plan allows``, or None.
    """

    def __init__(
        self,
        claims: ClaimGuard,
        *,
        lr: float | None = None,
        max_steps: Callable[[str, int], int] | None = None,
    ) -> None:
        self.claims = claims
        self.lr = lr
        self.max_steps = max_steps
        self.sha = ""  # model_fingerprint(w_t) of the round's train messages
        self.suspects: dict[str, str] = {}  # client id -> why its claims were bounded (round)

    def start_round(self, w_t: np.ndarray) -> None:
        """A new round at model ``w_t``: its fingerprint, no suspects yet."""
        self.sha = model_fingerprint(w_t)
        self.suspects = {}

    def refuse_contradictions(
        self, replies: list[Reply], failures: dict[str, str], sizes: Mapping[str, int]
    ) -> list[Reply]:
        """The replies whose statistics agree with their update and with this round's model
        (:func:`contradiction`, ``model-sha``); the others go to ``failures``. ``sizes``: every
        client's latest accepted size."""
        caps = self.size_caps({r.client_id: r.n for r in replies}, sizes)  # steps follow the cap
        keep = []
        for r in replies:
            why = self.stale_model(r.model_sha) or self.contradicts(r, caps)
            if why:
                failures[r.client_id] = f"refused: {why}"
            else:
                keep.append(r)
        return keep

    def contradicts(self, r: Reply, caps: Mapping[str, tuple[int, str]]) -> str | None:
        """Why a reply's F and steps contradict its update (:func:`contradiction`), or None;
        judged where the server sent ``lr`` and the node reports F and ``steps``."""
        lr = self.lr
        if lr is None or r.delta is None or "steps" not in r.metrics or "F" not in r.metrics:
            return None
        steps = r.metrics["steps"]
        if isinstance(steps, bool) or not isinstance(steps, int | float) or steps < 0:
            return f"steps={steps!r} is not a count"
        n = caps.get(r.client_id, (r.n, ""))[0]
        plan = None if self.max_steps is None else self.max_steps(r.client_id, n)
        norm = float(np.linalg.norm(r.delta))
        return contradiction(norm, float(r.metrics["F"]), int(steps), float(lr), plan)

    def size_caps(
        self, claims: Mapping[str, int], sizes: Mapping[str, int]
    ) -> dict[str, tuple[int, str]]:
        """:meth:`ClaimGuard.sizes` of this exchange's claims against the other clients' latest
        accepted sizes (``sizes``: every client's)."""
        known = {c: int(n) for c, n in sizes.items() if c not in claims}
        return self.claims.sizes(claims, known)

    def stale_model(self, sha: Any) -> str | None:
        """Why statistics echoing ``model-sha`` are not for this round's model, or None."""
        if sha is None or sha == self.sha:
            return None
        return f"statistics for model {str(sha)[:16]!r}, this round sent {self.sha}"

    def bound_claims(self, replies: list[Reply], sizes: Mapping[str, int]) -> None:
        """Cap outlying sizes and name (and with ``clip`` clip) outlying updates; the reasons go
        to this round's suspects. ``sizes``: every client's latest accepted size."""
        if not replies:
            return
        caps = self.size_caps({r.client_id: r.n for r in replies}, sizes)
        outliers = self.claims.updates(
            {r.client_id: r.delta for r in replies if r.delta is not None}
        )
        for r in replies:
            if r.client_id in caps:
                r.n, why = caps[r.client_id]
                self.suspect(r.client_id, why)
            if r.client_id in outliers:
                scale, why = outliers[r.client_id]
                if scale != 1.0:
                    r.delta = (r.delta * scale).astype(r.delta.dtype, copy=False)
                self.suspect(r.client_id, why)

    def suspect(self, cid: str, why: str) -> None:
        """Name ``cid`` among the round's suspects (each reason once)."""
        old = self.suspects.get(cid)
        if old is None:
            self.suspects[cid] = why
        elif why not in old:
            self.suspects[cid] = f"{old}; {why}"
