"""What :class:`~.strategy.FedselStrategy` checks before a run, in one line each: a selector
whose inputs Flower's messages cannot carry, and the information model the run reads (the spec's
own ``@MODEL``, or one given beside it that does not contradict it).
"""

from __future__ import annotations

from typing import Any

from selection.baselines.reads import Reads
from selection.errors import SelectionError
from selection.information import Information
from selection.selectors import as_selector

__all__ = ["check_flower_selector", "check_stats", "flower_information"]


def check_flower_selector(selector: Any, spec: Any) -> None:
    """Refuse, before any work, what the strategy cannot supply: a surrogate that needs the
    candidates' validation logits (``ensemble``) and verified picks (an evaluator of the true
    aggregate), neither of which the Message API's replies carry.

    Examples:
        >>> from fl_oracle.experiments.flower.checks import check_flower_selector
        >>> from selection.selectors import make_selector
        >>> check_flower_selector(make_selector("maxmin:2"), "maxmin:2") is None  # accepted
        True
        >>> check_flower_selector(make_selector("eps:5@verify"), "eps:5@verify")
        Traceback (most recent call last):
            ...
        ValueError: selector eps:5@verify: verified picks need the true aggregate of ...
    """
    from selection.surrogates import SurrogateSpec

    selector = as_selector(selector)
    sur = SurrogateSpec(selector.surrogate)  # a spec's, as parsed
    if sur.model.needs_logits:
        raise ValueError(
            f"selector {spec}: the {sur} surrogate needs every candidate's validation logits, "
            "which Flower's replies do not carry; use mean or weighted in Flower"
        )
    if selector.verify:
        raise ValueError(
            f"selector {spec}: verified picks need the true aggregate of candidates evaluated "
            "in-process; run it in fedsel train or fedsel study"
        )
    if selector.reads in (Reads.PROBE_GRADIENTS, Reads.PARTIAL_GRADIENTS):
        raise ValueError(
            f"selector {spec}: it reads the nodes' gradients at the model they received, "
            "which fedsel's Flower messages do not carry; use the updates (divfl:updates, "
            "divfl:fresh) in Flower, or run it in fedsel train or fedsel study"
        )


def flower_information(
    selector: Any,
    stats: str | None = None,
    *,
    n: int | None = None,
    k: int | None = None,
    privacy: Any = None,
) -> str:
    """The information model a Flower run reads: ``stats`` or the selector spec's own
    ``@MODEL``, checked as every driver checks it
    (:meth:`selection.specs.Spec.run_information`: a registered model, not contradicting the
    spec, feeding its surrogate; with ``n`` nodes and ``k``, against them by arithmetic).
    A baseline rule without a model, or a callable selector without ``stats``, reads the
    statistics of every node (``fresh``), as the strategy has always measured them; under
    secure aggregation (``privacy``, a :class:`~fl_oracle.experiments.privacy.StatsPrivacy`)
    a rule reads every node's probe pass at w_t instead (loss, F, B: what a rule reads, no
    single update evaluated at the server), as ``fedsel train`` serves every rule.

    Examples:
        >>> from fl_oracle.experiments.flower.checks import flower_information
        >>> flower_information("eps:5@stale"), flower_information("random", "pool:8")
        ('stale', 'pool:8')
        >>> flower_information("maxmin:2"), flower_information(lambda table, k: [])
        ('fresh', 'fresh')
        >>> flower_information("eps:5@stale", "probe")
        Traceback (most recent call last):
            ...
        selection.errors.SelectionError: --information probe contradicts the spec's @stale ...
    """
    from selection.information import default_information
    from selection.specs import Spec, parse_spec

    if isinstance(selector, str):
        selector = parse_spec(selector)
    if isinstance(selector, Spec):  # parsed once by the caller (a FlowerRun's spec)
        info = selector.run_information(stats, n=n, k=k)
    else:
        info = check_stats(default_information() if stats is None else stats)
    if not info.model.rule_reads:  # a rule's own reads: measured by fresh, or probe below
        return info
    if privacy is not None and privacy.secure_aggregation:
        return _RULE_VIEW
    return default_information()


#: what a rule reads under secure aggregation: the probe pass (``fedsel train``'s rule view)
_RULE_VIEW = "probe"


def check_stats(stats: str) -> Information:
    """The strategy's information model as parsed (:class:`selection.information.Information`:
    a registered model, plugins' included, and its argument); ValueError in one line for
    anything else. Every model runs in Flower: the strategy plays ``fedsel train``'s round.

    Examples:
        >>> from fl_oracle.experiments.flower.checks import check_stats
        >>> info = check_stats("pool: 8")
        >>> info, info.arg, check_stats("stale")
        ('pool:8', 8, 'stale')
        >>> check_stats("bogus")
        Traceback (most recent call last):
            ...
        ValueError: stats mode 'bogus': unknown information model 'bogus' (one of fresh, ...)
    """
    try:
        return Information(stats)  # a spec's parsed model is not parsed again
    except SelectionError as exc:
        raise ValueError(f"stats mode {stats!r}: {exc}") from None
