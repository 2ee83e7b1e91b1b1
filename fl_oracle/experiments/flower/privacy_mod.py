"""The privacy mode of :mod:`fl_oracle.experiments.privacy` as a Flower client Mod.

``mods=[fedsel_privacy_mod(), fedsel_stats_mod(...)]`` (or fedsel's own Digits-4 ClientApp,
which ``fedsel flower --dp-epsilon`` builds with it): the Mod sits outermost, so it sees every
train reply after the app and the other mods wrote their statistics, and before the reply
leaves the node. It clips and noises what the node reports of its data — ``loss``, ``F``
(log scale), ``cos-g``, each first-order utility of ``x`` and the label histogram — exactly as
:meth:`~fl_oracle.experiments.privacy.StatsPrivacy.privatize` does, with the noise multiplier
of the run's (ε, δ) over its rounds. The model update (an ``ArrayRecord``) is not touched:
Flower's own differential-privacy wrappers (``DifferentialPrivacyClientSideFixedClipping``
and its ``fixedclipping_mod``) noise the update and compose with this Mod.

One difference from the in-process loop: a Flower node reports its label histogram (the
server computes B against the global distribution, which the node does not know), so here the
histogram's C class fractions are the reported fields instead of B's one number: a report of
m = 3 + C + D fields instead of 4 + D, hence √((3 + C + D) / (4 + D)) times the loop's noise
in unit widths, for the same guarantee.

A node reports once a round: a second reply of the same round (the ``probe`` model's commit
after its probe) repeats the values the first released (post-processing: no new cost, and no
two noisy copies of one value to difference). The evaluate round's replies (a node's loss, F
and probe gradient for the simulator's own records) are not noised: fedsel's run skips that
round under the privacy mode. The noise comes from the operating system's entropy (``seed``
None), as a deployment's must; a seed makes a simulation repeatable.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from flwr.app import Context, Message, MessageType

from fl_oracle.experiments.privacy import StatsPrivacy

__all__ = ["fedsel_privacy_mod", "privatize_metrics"]

#: reply metric -> the privacy mode's field
_SCALARS = {"loss": "loss", "F": "F", "cos-g": "cos_g"}
#: every reply metric the Mod noises
_REPORTED = (*_SCALARS, "x", "label-hist")


def privatize_metrics(metrics: dict, privacy: StatsPrivacy, rng: np.random.Generator) -> dict:
    """The metrics a node reports, as the privacy mode lets them leave it (a new dict).

    ``loss``, ``F``, ``cos-g``, every entry of ``x`` and the label histogram's class
    fractions (back to counts of the same total afterwards) are clipped and noised together:
    one report of m fields, Δ = √m in unit widths. Other metrics pass unchanged.

    Examples:
        >>> import numpy as np
        >>> from fl_oracle.experiments.flower.privacy_mod import privatize_metrics
        >>> from fl_oracle.experiments.privacy import StatsPrivacy
        >>> m = {"loss": 99.0, "F": 2.5, "label-hist": [6, 0, 6], "num-examples": 12}
        >>> privatize_metrics(m, StatsPrivacy(), np.random.default_rng(0)) == m  # off
        True
        >>> weak = StatsPrivacy(epsilon=1e6)  # almost no noise: the clipping shows
        >>> out = privatize_metrics(m, weak, np.random.default_rng(0))
        >>> round(out["loss"], 1), round(out["F"], 1), [round(v, 1) for v in out["label-hist"]]
        (10.0, 2.5, [6.0, 0.0, 6.0])
        >>> p = StatsPrivacy(epsilon=1.0, rounds=5)
        >>> out = privatize_metrics(m, p, np.random.default_rng(0))
        >>> 0.01 <= out["loss"] <= 10.0, round(sum(out["label-hist"]), 6), out["num-examples"]
        (True, 12.0, 12)
    """
    row: dict[str, float] = {}
    fields = []
    for key, name in _SCALARS.items():
        if key in metrics:
            row[name] = float(metrics[key])
            fields.append(name)
    x = list(metrics.get("x") or ())
    for j, v in enumerate(x):
        row[f"x_{j}"] = float(v)
    if x:
        fields.append("x")
    hist = np.asarray(metrics.get("label-hist") or (), dtype=float)
    total = float(hist.sum())
    for j, v in enumerate(hist):
        row[f"h_{j}"] = v / total if total > 0 else 0.0
    if len(hist):
        fields.append("h")
    if not fields:
        return dict(metrics)
    out = privacy.privatize(pd.DataFrame([row]), tuple(fields), rng).iloc[0]
    new = dict(metrics)
    for key, name in _SCALARS.items():
        if key in metrics:
            new[key] = float(out[name])
    if x:
        new["x"] = [float(out[f"x_{j}"]) for j in range(len(x))]
    if len(hist):
        frac = np.array([out[f"h_{j}"] for j in range(len(hist))])
        frac = frac / frac.sum() if frac.sum() > 0 else np.full(len(hist), 1.0 / len(hist))
        new["label-hist"] = [float(v) for v in frac * total]
    return new


def fedsel_privacy_mod(
    privacy: StatsPrivacy | None = None, *, seed: int | None = None
) -> Callable[[Message, Context, Callable[[Message, Context], Message]], Message]:
    """A Flower Mod noising every train reply's statistics (module docstring).

    Args:
        privacy: the run's privacy mode; None = read from the run config (``dp-epsilon``,
            ``dp-delta``, ``num-server-rounds``) at the first message, off when absent.
        seed: the noise's seed (None: the run config's ``dp-seed``, else the operating
            system's entropy); a node mixes in its ``partition-id`` and the message's
            ``server-round``.

    Examples:
        >>> from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict
        >>> from fl_oracle.experiments.flower.local_grid import LocalGrid
        >>> from fl_oracle.experiments.flower.privacy_mod import fedsel_privacy_mod
        >>> from fl_oracle.experiments.privacy import StatsPrivacy
        >>> def train(msg, ctx):  # the app's reply: a loss beyond the box [0.01, 10] nats
        ...     m = MetricRecord({"loss": 99.0, "num-examples": 12, "label-hist": [6, 0, 6]})
        ...     return Message(RecordDict({"metrics": m}), reply_to=msg)
        >>> mod = fedsel_privacy_mod(StatsPrivacy(epsilon=1e6), seed=0)  # a tiny noise
        >>> grid = LocalGrid(lambda msg, ctx: mod(msg, ctx, train), 1)  # one node, id 1001
        >>> def ask(kind, server_round):  # the node's reply metrics to one message
        ...     cfg = RecordDict({"config": ConfigRecord({"server-round": server_round})})
        ...     (reply,) = grid.send_and_receive([grid.create_message(cfg, kind, 1001, "")])
        ...     return dict(reply.content["metrics"])
        >>> first, again = ask("train", 1), ask("train", 1)  # the same round twice
        >>> round(first["loss"], 1), first["num-examples"], first == again
        (10.0, 12, True)
        >>> ask("train", 2)["loss"] != first["loss"], ask("evaluate", 2)["loss"]
        (True, 99.0)
    """
    cache: dict[str, StatsPrivacy | None] = {}
    #: (partition-id, server-round) -> the statistics this node released that round: a
    #: second reply of the round (a probe, then a commit) repeats them, so a round costs one
    #: report and two noisy copies of one value never leave the node
    released: dict[tuple[int, int], dict] = {}

    def mode(ctx: Context) -> StatsPrivacy | None:
        if privacy is not None:
            return privacy
        if "p" not in cache:
            cfg = ctx.run_config
            eps = float(cfg.get("dp-epsilon", float("inf")))
            rounds = int(cfg.get("num-server-rounds", 1))
            p = StatsPrivacy(
                epsilon=eps, delta=float(cfg.get("dp-delta", 1e-5)), rounds=max(1, rounds)
            )
            cache["p"] = p if p.on else None
        return cache["p"]

    def mod(msg: Message, ctx: Context, call_next: Callable[[Message, Context], Message]):
        reply = call_next(msg, ctx)
        if msg.metadata.message_type != MessageType.TRAIN or reply.has_error():
            return reply
        p = mode(ctx)
        if p is None or not reply.has_content():
            return reply
        config = msg.content.config_records
        cfg = next(iter(config.values())) if config else {}
        round_ = int(cfg.get("server-round", 0)) if hasattr(cfg, "get") else 0
        pid = int(ctx.node_config.get("partition-id", 0))
        s = seed if seed is not None else ctx.run_config.get("dp-seed")
        s = None if s is None or int(s) < 0 else int(s)  # < 0: the OS's entropy
        rng = (
            np.random.default_rng()
            if s is None
            else np.random.default_rng([int(s), round_, pid, 0x5EC])
        )
        key = (pid, round_)
        for k in [k for k in released if k[0] == pid and k[1] != round_]:
            del released[k]  # a node keeps its current round only
        for name, record in list(reply.content.metric_records.items()):
            given = released.get(key)
            if given is None:
                new = privatize_metrics(dict(record), p, rng)
                released[key] = {f: new[f] for f in _REPORTED if f in new}
            else:  # the same round again: what it released already, nothing new
                new = {**dict(record), **{f: v for f, v in given.items() if f in record}}
                fresh = [f for f in _REPORTED if f in record and f not in given]
                if fresh:  # a statistic the first reply lacked: noised now, kept for the round
                    extra = privatize_metrics({f: record[f] for f in fresh}, p, rng)
                    new.update(extra)
                    given.update(extra)
            for k, value in new.items():
                record[k] = value
            reply.content[name] = record
        return reply

    return mod
