"""The in-process transport: what a round of ``fedsel train`` asks of the oracle's clients.

:class:`OracleTransport` implements :class:`fl_oracle.experiments.transport.Transport` over an
:class:`~fl_oracle.sim.oracle.Oracle` (or any object with its methods): the clients train at
w_t through ``round_stats``, run the probe pass through ``probe_table``, and the chosen are
committed through ``step``. What they report passes the run's privacy mode
(:mod:`.privacy`) on its way out, and every round is charged what a deployment would pay
(:mod:`.cost`) from the work the oracle reports.

``rule`` (a baseline rule without an information model) runs the probe pass in the simulator
(``rule_view``; ``fresh`` where the run's statistics are kept as ground truth), which gives the
rule exactly what it reads (F, loss; sizes), and is charged for what the rule reads; with
``lean`` (what the rule reads, when nothing else is computed) the rule's problem is built from
the clients' sizes and, where it reads one, their probe pass (:meth:`rule_problem`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fl_oracle.experiments.cost import COST_COLUMNS, FLOAT_BYTES, round_cost
from fl_oracle.experiments.privacy import RunAccountant, StatsPrivacy
from fl_oracle.experiments.round_step import GLOBAL_KEYS, RoundChoice, domain_metrics
from fl_oracle.experiments.transport import Before, Committed
from selection.baselines.base import Baseline
from selection.baselines.reads import Reads, VectorSource
from selection.errors import SelectionError
from selection.information import InformationModel, RoundInputs
from selection.problem import SelectionProblem

__all__ = ["OracleTransport", "PROBE_FIELDS", "TRAINED_FIELDS"]

#: what a probing client reports (:data:`fl_oracle.experiments.privacy.FIELDS`)
PROBE_FIELDS = ("loss", "F", "B", "cos_g", "x")
#: what a client that trained reports beside its update (its U_d are the server's evaluation)
TRAINED_FIELDS = ("loss", "F", "B")


class OracleTransport:
    """One run's clients in the oracle (module docstring).

    Args:
        oracle: the simulator.
        model: the run's information model (``rule``: the view ``rule_view`` names).
        selector: the run's selector (what a rule reads, what it is charged).
        seed: the run's seed (the privacy noise's stream).
        rule: the selector is a baseline rule without an information model.
        lean: what a lean rule reads (``Baseline.reads``), None for the model's round.
        privacy: the privacy mode of what clients report (None: off).
        stats_kw: ``round_stats``' options (records skipped).
        step_kw: ``step``'s options (records skipped).
        before_step: called after the choice, before the commit; its items join the row.
        keep_metrics: further keys of ``step``'s result copied into the row.
        measured_column: write ``measured = True`` (a run with training-only rounds).

    Examples:
        >>> from fl_oracle.sim.oracle import small_oracle
        >>> oracle = small_oracle()  # 2 domains x 2 clients of 8 generated images
        >>> from selection.information import make_information
        >>> from fl_oracle.experiments.oracle_transport import OracleTransport
        >>> transport = OracleTransport(oracle, make_information("fresh"), selector=None)
        >>> transport.clients(0)["client_id"].tolist(), list(transport.domains)
        (['svhn-0', 'svhn-1', 'syn-0', 'syn-1'], ['svhn', 'syn'])
        >>> transport.train(0, ["syn-1"])[["client_id", "round", "n_samples"]].values.tolist()
        [['syn-1', 0, 8]]
    """

    error = SelectionError

    def __init__(
        self,
        oracle: Any,
        model: InformationModel,
        selector: Any,
        *,
        seed: int = 0,
        rule: bool = False,
        lean: str | None = None,
        privacy: StatsPrivacy | None = None,
        stats_kw: Mapping[str, Any] | None = None,
        step_kw: Mapping[str, Any] | None = None,
        before_step: Callable[[], Mapping[str, Any]] | None = None,
        keep_metrics: Sequence[str] = (),
        measured_column: bool = False,
    ) -> None:
        self.oracle = oracle
        self.model = model
        self.selector = selector
        self.seed = int(seed)
        self.rule = bool(rule)
        self.lean = lean
        #: the privacy mode of what clients report (None: off) and the fields a rule reports
        self.privacy = privacy
        self.reports = tuple(selector.reports) if selector is not None else ("loss",)
        self.accountant = RunAccountant(privacy) if privacy is not None else None
        self.stats_kw = dict(stats_kw or {})
        self.step_kw = dict(step_kw or {})
        self.before_step = before_step
        self.keep_metrics = tuple(keep_metrics)
        self.measured_column = measured_column
        self.domains = tuple(oracle.domains)
        self._clients: pd.DataFrame | None = getattr(oracle, "clients", None)
        self._logits = None  # ValidationLogits the selector sees (stale: of each row's round)

    # ------------------------------------------------------------------ before the choice
    def clients(self, t: int) -> pd.DataFrame:
        if self._clients is None:  # an oracle without a client table: its statistics name them
            self._clients = self.oracle.round_stats()[["client_id", "domain", "n_samples"]]
        return self._clients

    def rule_problem(self, t: int, k: int) -> SelectionProblem | None:
        """A lean rule's problem: the clients' sizes, and its probe pass where it reads one."""
        if self.lean is None:
            return None
        table = self.clients(t).reset_index(drop=True)
        if self.lean.startswith("probe"):
            probe = self._private(self.oracle.probe_pass(), t, self.reports)
            table = table.merge(probe.drop(columns=["domain", "n_samples"]), on="client_id")
        table.insert(0, "round", int(t))
        return SelectionProblem.from_clients(table, k, self.domains, t)

    def train(self, t: int, ids: Sequence[str]) -> pd.DataFrame:
        every = len(ids) == len(self.clients(t))
        measured = self.oracle.round_stats(None if every else list(ids), **self.stats_kw).copy()
        # a rule reads its own report (the same mechanism as its lean rounds')
        fields, stream = (self.reports, 0) if self.rule else (TRAINED_FIELDS, 1)
        return self._private(measured, t, fields, stream=stream)

    def probe(self, t: int) -> tuple[pd.DataFrame, Mapping[str, float], Mapping[str, int]]:
        probe, acc, sizes = self.oracle.probe_table()
        return self._private(probe, t, self.reports if self.rule else PROBE_FIELDS), acc, sizes

    def logits(self, model: InformationModel, inputs: RoundInputs) -> Any:
        logits = None
        get = getattr(self.oracle, "round_logits", None)
        if model.logits and callable(get) and inputs.measured is not None:
            fresh = get(list(inputs.measured["client_id"]))
            logits = fresh if self._logits is None else self._logits.replace_rows(fresh)
        elif model.logits and self._logits is not None:
            logits = self._logits
        if logits is not None and model.remembers:
            self._logits = logits
        return logits

    def prepare(self, t: int, table: pd.DataFrame) -> tuple[pd.DataFrame, None, str]:
        return table, None, ""  # the oracle's clients report every statistic

    def vectors(self, source: VectorSource, table: pd.DataFrame) -> tuple[list[str], np.ndarray]:
        """Every client's update vector ``source`` names this round (ids, rows)."""
        return list(self.clients(0)["client_id"]), self.oracle.update_vectors(source)

    # ------------------------------------------------------------------ the commit
    def commit(self, t: int, choice: RoundChoice, inputs: RoundInputs, before: Before) -> Committed:
        ids = choice.ids
        measured = before is Before.MEASURED
        observed = self._observed(t, inputs, ids) if measured else None
        # a lean rule's or a training-only round's picks train inside the step (nothing
        # measured them before it)
        cost = self._cost(choice.problem, inputs, ids) if measured else None
        extra = dict(self.before_step()) if self.before_step is not None else {}
        metrics = self.oracle.step(ids, weights=choice.weights, **self.step_kw)
        if before is Before.BARE:  # only the picks' training: nothing was asked before
            cost = self._training_cost(ids)
        elif cost is None:
            cost = self._cost(choice.problem, inputs, ids, work=self.oracle.last_work)
        columns = {
            **{key: float(metrics[key]) for key in GLOBAL_KEYS if key in metrics},
            **extra,
            **{key: metrics[key] for key in self.keep_metrics},
        }
        if self.accountant is not None:
            columns["dp_epsilon"] = self.accountant.step()
            columns["dp_z"] = float(self.privacy.z)
        if self.measured_column:
            columns["measured"] = before is not Before.BARE
        return Committed(domain_metrics(metrics, self.domains), observed, cost, columns)

    def _observed(self, t: int, inputs: RoundInputs, ids: list[str]) -> pd.DataFrame:
        """The committed clients' true statistics at w_t (their updates train for the
        commit); the remembered logits of those clients follow them."""
        m = inputs.measured
        if m is not None and set(ids) <= set(m["client_id"]):
            rows = m[m["client_id"].isin(ids)]
        else:
            rows = self._private(
                self.oracle.round_stats(list(ids), **self.stats_kw), t, TRAINED_FIELDS, 2
            )
        get = getattr(self.oracle, "round_logits", None)
        if self.model.remembers and self._logits is not None and callable(get):
            self._logits = self._logits.replace_rows(get(list(ids)))
        return rows

    def _training_cost(self, ids: list[str]) -> dict[str, float]:
        """A training-only round's cost: the picks' training (NaN where the oracle does not
        report its work)."""
        work = getattr(self.oracle, "last_work", None)
        if not isinstance(work, Mapping) or not callable(getattr(self.oracle, "probe_sizes", None)):
            return {c: float("nan") for c in COST_COLUMNS}
        return round_cost(
            trained={c: work[c] for c in ids},
            probed=(),
            probe_sizes={},
            probe_floats=0,
            model_bytes=int(self.oracle.model_bytes),
        )

    def _private(
        self, table: pd.DataFrame, t: int, fields: tuple[str, ...], stream: int = 0
    ) -> pd.DataFrame:
        """``table``'s reported ``fields`` as the privacy mode lets them leave the clients
        (unchanged without one); the noise is drawn from the (seed, round, stream) stream."""
        if self.privacy is None or not self.privacy.on:
            return table
        rng = np.random.default_rng([self.seed, int(t), 0x5EC, int(stream)])
        return self.privacy.privatize(table, fields, rng)

    def _cost(
        self,
        problem: SelectionProblem,
        inputs: RoundInputs,
        ids: list[str],
        work: Mapping[str, int] | None = None,
    ) -> dict[str, float]:
        """The round's deployment cost (:mod:`fl_oracle.experiments.cost`); NaN where the
        oracle does not report its work. ``work``: the round's local work when the oracle has
        already committed it (``oracle.last_work``), else read from the oracle now."""
        o, selector = self.oracle, self.selector
        work_of = getattr(o, "local_work", None)
        if not callable(work_of) or not callable(getattr(o, "probe_sizes", None)):
            return {c: float("nan") for c in COST_COLUMNS}
        work = work_of() if work is None else work
        before = [] if inputs.measured is None else list(inputs.measured["client_id"])
        all_ids = list(inputs.clients["client_id"])
        down = None
        if self.rule and selector.reads is not None:  # a baseline rule: charged what it reads
            every = selector.reads == Reads.FRESH_UPDATES  # all train at w_t
            trained = {c: work[c] for c in (work if every else ids)}
            probed = selector.probed_ids(problem)
            floats = int(selector.probe_floats)
            if floats == Baseline.MODEL_SIZED:
                floats = int(o.model_bytes) // FLOAT_BYTES
        else:
            trained = {c: work[c] for c in dict.fromkeys([*before, *ids])}
            probed = self.model.probed(all_ids, before, ids)
            floats = self.model.probe_floats(int(getattr(o, "n_classes", 10)), len(o.domains))
            if self.model.probes and not before:  # probed, then the picks committed
                down = self.model.down_messages(len(probed), len(trained), len(o.domains))
        return round_cost(
            trained=trained,
            probed=probed,
            probe_sizes=o.probe_sizes(),
            probe_floats=floats,
            model_bytes=int(o.model_bytes),
            down_messages=down,
        )
