"""Stock ClientApps in a fedsel round: what
:class:`~fl_oracle.experiments.flower.strategy.FedselStrategy` infers and fills in for nodes
that report none of fedsel's statistics (Flower's ``quickstart-pytorch``: its model and
``num-examples``).

* :meth:`StockClients.infer_domains`: a node that reports no domain is given the one its update
  lifts most on the server's per-domain validation data (guessed once: a node keeps its domain).
* :meth:`StockClients.complete`: F and B that some nodes lack are filled in neutrally (F = 1,
  B = 0) when the selector's choice does not read them (:meth:`StockClients.selector_reads`,
  decided once per column on copies of the selector); otherwise ``on_missing`` decides: a
  fallback selector for such rounds, or :class:`~.probe.FlowerRunError`.
* :meth:`StockClients.domain_list`: the history's domains, the ``acc_<domain>`` metrics of the
  server's ``evaluate_global`` (read once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from fl_oracle.experiments.flower.codec import Reply
from fl_oracle.experiments.flower.probe import FlowerRunError
from fl_oracle.experiments.round_step import run_selector
from selection.problem import SelectionProblem
from selection.words import counted

__all__ = ["BACK", "StockClients"]

# The statistics columns after the per-domain utilities U_<domain> in a round-stats table
# (U_own and U_local are no domain's utility).
BACK = ("U_own", "U_local", "dU", "F", "B", "cos_g", "loss", "steps", "gamma_achieved")
_ACC_SUMMARY = {"pooled", "avg", "worst", "gap", "std"}


class StockClients:
    """What the strategy infers and fills in for stock nodes (module text).

    Args:
        selector: the strategy's selector.
        name: its name (log lines, errors).
        seed: the strategy's seed (the random columns of :meth:`selector_reads`).
        k: nodes trained per round.
        on_missing: ``"error"`` or ``"fallback:<spec>"`` (the strategy's).
        fallback: the selector of ``fallback:<spec>``; None with ``"error"``.
        evaluate_candidates: the server's ``(w_t, deltas (M, P)) -> {column: (M,) values}``,
            or None (then a node that reports no domain stops the run).
    """

    def __init__(
        self,
        selector: Any,
        *,
        name: str,
        seed: int,
        k: int,
        on_missing: str,
        fallback: Any,
        evaluate_candidates: Callable[[np.ndarray, np.ndarray], Mapping[str, Any]] | None,
    ) -> None:
        self.selector = selector
        self.name = name
        self.seed = int(seed)
        self.k = int(k)
        self.on_missing = on_missing
        self.fallback = fallback
        self.evaluate_candidates = evaluate_candidates
        self.guessed: dict[str, str] = {}  # client id -> the domain inferred for it
        self.reads: dict[str, bool] = {}  # column -> whether the selector's choice reads it
        self.domains: list[str] | None = None  # the history's domains (domain_list)

    def infer_domains(
        self, replies: list[Reply], server: Mapping[str, np.ndarray], w_t: np.ndarray
    ) -> None:
        """A node that reports no domain is given the domain its update lifts most over w_t on
        the server's per-domain validation data (guessed once: a node keeps its domain)."""
        blind = [j for j, r in enumerate(replies) if not r.domain]
        if not blind:
            return
        doms = [c[2:] for c in server if c.startswith("U_") and c not in BACK]
        if not doms:
            raise FlowerRunError(
                f"{replies[blind[0]].client_id} reports no domain and the server has no "
                "per-domain validation (evaluate_candidates) to infer it: add "
                "fedsel_stats_mod(domain=...) to the ClientApp's mods"
            )
        todo = [j for j in blind if replies[j].client_id not in self.guessed]
        if todo:
            U = np.column_stack([np.asarray(server[f"U_{d}"], dtype=float) for d in doms])
            # the lift over the model the update started from, w_t (a zero update)
            base = self.evaluate_candidates(w_t, np.zeros((1, len(w_t)), dtype=np.float32))
            lift = U - np.array([float(np.asarray(base[f"U_{d}"])[0]) for d in doms])[None, :]
            for j in todo:  # a node keeps its first guess
                self.guessed[replies[j].client_id] = doms[int(np.argmax(lift[j]))]
        for j in blind:
            replies[j].domain = self.guessed[replies[j].client_id]

    def complete(self, table: pd.DataFrame):
        """(table, selector, note): statistics stock nodes lack filled in neutrally when the
        selector does not read them; otherwise the ``on_missing`` rule."""
        from logging import INFO, WARNING

        from flwr.supercore import log

        gaps = [c for c in ("F", "B") if c in table.columns and table[c].isna().any()]
        if not gaps:
            return table, self.selector, ""
        neutral = table.fillna({"F": 1.0, "B": 0.0})
        reads = [c for c in gaps if self.selector_reads(neutral, c)]
        lack = table.loc[table[gaps].isna().any(axis=1), "client_id"].tolist()
        if not reads:
            if not self.reads.get("_said_neutral"):
                self.reads["_said_neutral"] = True
                log(INFO, "fedsel: %s does not read %s, which %d node(s) do not report; "
                    "filled in neutrally", self.name, "/".join(gaps), len(lack))  # fmt: skip
            return neutral, self.selector, ""
        what = "/".join(reads)
        line = (
            f"fedsel: {self.name} reads {what}, which {len(lack)} of {counted(len(table), 'node')} do not "
            f"report ({', '.join(lack[:5])}{', ...' if len(lack) > 5 else ''}): add "
            "mods=[fedsel_stats_mod(...)] (fl_oracle.experiments.flower.mod) to their ClientApp"
        )
        if self.fallback is None:
            raise FlowerRunError(line)
        if not self.reads.get("_said_fallback"):
            self.reads["_said_fallback"] = True
            log(WARNING, "%s; until then rounds select by %s", line, self.on_missing[9:])
        note = f"{len(lack)} node(s) lack {what}: selected by {self.on_missing[9:]}"
        return neutral, self.fallback, note

    def selector_reads(self, neutral: pd.DataFrame, column: str) -> bool:
        """Whether the selector's choice changes with ``column`` (decided once per column, on
        copies of the selector, so its own random stream is untouched)."""
        import copy

        if column not in self.reads:
            rng = np.random.default_rng([self.seed, 0x5EE])
            probe = neutral.copy()
            if column == "F":
                probe["F"] = np.exp(rng.normal(0.0, 2.0, len(probe)))
            else:
                probe["B"] = rng.uniform(0.0, 0.69, len(probe))
            if len(neutral) <= self.k:  # every node is chosen: nothing to tell, decide later
                return False
            picks = []
            try:
                for tab in (neutral, probe):
                    problem = SelectionProblem.from_stats(tab, self.k)
                    picks.append(
                        sorted(run_selector(copy.deepcopy(self.selector), tab, problem)[0])
                    )
            except Exception:  # noqa: BLE001 - cannot be copied or probed: assume it reads
                picks = [0, 1]
            self.reads[column] = picks[0] != picks[1]
        return self.reads[column]

    def domain_list(self, metrics: Mapping[str, Any]) -> list[str]:
        """The domains of the first ``acc_<domain>`` metrics seen (summaries left out)."""
        if self.domains is None:
            self.domains = [
                k[4:] for k in metrics if k.startswith("acc_") and k[4:] not in _ACC_SUMMARY
            ]
        return self.domains
