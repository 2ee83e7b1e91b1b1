"""The Digits-4 Flower ServerApp: :class:`FedselStrategy` with the oracle's server-side data.

The server holds the validation and test sets of the federation (never a client's shard): it
evaluates U and U_<domain> of every candidate w_t + Δ_i on the validation sets, and the test
accuracy of each new global model for the history, as the in-process oracle does.

``app`` (for ``flwr run``) reads the run from the run config (``selector``, ``k``,
``num-server-rounds``, ``stats``, ``timeout``, ``out`` and the federation keys of
:data:`fl_oracle.experiments.flower.digits.RUN_CONFIG_FIELDS`); :func:`make_server_app` takes a
:class:`FlowerRun` directly and leaves the history in :attr:`FlowerRun.result`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from flwr.app import Array, ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from fl_oracle.experiments.flower.checks import flower_information
from fl_oracle.experiments.flower.digits import (
    DigitsServer,
    DigitsSettings,
    settings_from_run_config,
    strategy_run_config,
)
from fl_oracle.experiments.flower.server_side import NodePolicy, ServerSide
from fl_oracle.experiments.flower.strategy import FedselStrategy
from fl_oracle.experiments.privacy import StatsPrivacy
from fl_oracle.sim.local import plan_steps
from selection.specs import Spec, parse_spec

__all__ = ["FlowerRun", "FlowerResult", "make_server_app", "write_run", "app"]


@dataclass
class FlowerResult:
    """What a run produced: ``history`` rows and per-round ``stats`` tables."""

    history: list[dict] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)
    server: DigitsServer | None = None

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        h = pd.DataFrame(self.history)
        s = pd.concat(self.tables, ignore_index=True) if self.tables else pd.DataFrame()
        return h, s


@dataclass
class FlowerRun:
    """One fedsel run on Flower.

    Attributes:
        settings: the Digits-4 federation.
        selector: selector spec, as given (the history's ``selector``).
        k: nodes trained per round.
        rounds: rounds R.
        stats: the information model (``fresh``, ``stale``, ``pool:P``, ``probe``,
            ``predicted``); None or "" (default): the selector spec's own ``@MODEL``, else
            ``fresh``. Resolved and checked at construction
            (:func:`~fl_oracle.experiments.flower.checks.flower_information`): a contradiction
            with the spec is refused.
        timeout: seconds to wait for one exchange's replies.
        wait_for_nodes: seconds to wait for K nodes to connect.
        out: folder for ``history.csv`` and ``stats.parquet`` after every round (None = none).
        clip_updates: an update whose norm lies beyond the round's others (:mod:`.guard`) is
            scaled down to the largest within, not only named: a node's update is taken on
            trust no more than its size (honest Digits-4 updates lie far inside the fence, so
            honest runs are unchanged; ``FedselStrategy``'s option, on for the digits apps).
        privacy: the privacy mode of the nodes' statistics (their ClientApp's Mod; None: off).
        result: filled while the ServerApp runs.
        spec: ``selector`` parsed, once, at construction (:class:`selection.specs.Spec`),
            its information model the one the run reads: what the strategy is built from.
            Across processes (``flwr run``) the run config carries its text and ``stats``.
    """

    settings: DigitsSettings
    selector: str
    k: int
    rounds: int
    stats: str | None = None
    timeout: float = 600.0
    wait_for_nodes: float = 30.0
    out: Path | None = None
    clip_updates: bool = True
    privacy: StatsPrivacy | None = None
    result: FlowerResult = field(default_factory=FlowerResult)
    spec: Spec = field(init=False, repr=False)

    def __post_init__(self) -> None:
        spec = parse_spec(self.selector)
        self.stats = flower_information(
            spec, self.stats or None, k=int(self.k), privacy=self.privacy
        )
        self.spec = replace(spec, stats_mode=self.stats)
        if self.privacy is not None:
            self.privacy.check_spec(spec, self.stats)


def write_run(out: Path, history: pd.DataFrame, stats: pd.DataFrame) -> None:
    """``history.csv`` and ``stats.parquet`` atomically (as ``fedsel train``)."""
    from selection.atomic import write_table_atomic

    write_table_atomic(history, out / "history.csv")
    write_table_atomic(stats, out / "stats.parquet")


def run_strategy(grid: Grid, run: FlowerRun) -> FlowerResult:
    """Build the server and the strategy and run ``run.rounds`` rounds on ``grid``."""
    server = DigitsServer(run.settings)
    cfg = server.config
    res = run.result
    res.server = server

    def on_round(row: dict, table: pd.DataFrame) -> None:
        if not res.history or res.history[-1] is not row:
            res.history.append(row)
            res.tables.append(table)
        if run.out is not None:
            write_run(Path(run.out), *res.frames())

    strategy = FedselStrategy(
        run.spec,
        run.k,
        name=run.selector,
        seed=cfg.seed,
        stats=run.stats,
        proximal_mu=cfg.mu,
        server=ServerSide(
            evaluate_candidates=server.candidate_utilities,
            validation_gradients=server.validation_gradients,
            evaluate_global=server.test_metrics,
            # a node's steps are the plan of its (accepted) size: a bigger claim is refused
            max_steps=lambda cid, n: plan_steps(n, cfg.batch_size, cfg.budget(cid))[1],
        ),
        aggregation=cfg.aggregation,
        on_round=on_round,
        # private statistics: no evaluate round (its replies carry a node's loss, F and
        # gradient for the simulator's own records, which the Mod does not noise)
        fraction_evaluate=0.0 if run.privacy is not None and run.privacy.on else 1.0,
        nodes=NodePolicy(
            client_ids=server.client_ids,
            timeout=run.timeout,
            wait_for_nodes=run.wait_for_nodes,
            train_config={"lr": cfg.lr, "gamma": cfg.gamma},
            clip_updates=run.clip_updates,
        ),
    )
    if run.privacy is not None:
        strategy.prepare_privacy(run.privacy)
    arrays = ArrayRecord({"w": Array(server.initial_params())})
    strategy.start(grid=grid, initial_arrays=arrays, num_rounds=run.rounds, timeout=run.timeout)
    return res


def make_server_app(run: FlowerRun) -> ServerApp:
    """A ServerApp running ``run``; its history lands in ``run.result``."""
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        run_strategy(grid, run)

    return server_app


def _run_from_context(grid: Grid, context: Context) -> FlowerRun:
    rc: Any = context.run_config
    v = strategy_run_config(rc)
    nodes = v["num-partitions"] or len(list(grid.get_node_ids())) or None
    privacy = None  # the privacy mode the nodes' Mod reads from the same run config
    if math.isfinite(v["dp-epsilon"]) or v["secure-aggregation"]:
        privacy = StatsPrivacy(
            epsilon=v["dp-epsilon"],
            delta=v["dp-delta"],
            rounds=int(v["num-server-rounds"]),
            secure_aggregation=v["secure-aggregation"],
        )
    return FlowerRun(
        settings=settings_from_run_config(rc, nodes),
        selector=v["selector"],
        k=v["k"],
        rounds=v["num-server-rounds"],
        stats=v["stats"],
        timeout=v["timeout"],
        out=Path(v["out"]),
        privacy=privacy,
    )


app = ServerApp()


def run_toml(run: FlowerRun, engine: str, provenance: dict, command: str = "") -> str:
    """``config.toml`` of a Flower run: the configuration, the data provenance and the run
    record (engine, flwr version, selector, K, rounds, nodes, statistics mode)."""
    import flwr

    from fl_oracle.experiments.run_record import record_toml, run_record
    from fl_oracle.sim.data.provenance import provenance_toml

    config = run.settings.config
    rec = run_record("cpu", command=command)
    rec.update(
        engine=engine,
        flwr_version=flwr.__version__,
        selector=run.selector,
        k=int(run.k),
        rounds=int(run.rounds),
        num_supernodes=int(config.clients_per_domain * len(config.domains)),
        stats_mode=run.stats,
    )
    text = config.to_toml() + "\n" + provenance_toml(provenance) + "\n" + record_toml(rec)
    if run.privacy is not None:  # ε, δ, z and secure aggregation, as fedsel train records
        text += "\n" + run.privacy.to_toml()
    return text


@app.main()
def _main(grid: Grid, context: Context) -> None:
    """``flwr run``: the run folder of the run config's ``out`` follows fedsel's rule (locked
    for the run, another run refused unless ``overwrite = true``, its config.toml written)."""
    from fl_oracle.experiments.runfolder import claim_run_folder
    from selection.atomic import write_text_atomic

    run = _run_from_context(grid, context)
    overwrite = strategy_run_config(context.run_config)["overwrite"]
    with claim_run_folder(
        run.out, "flower", overwrite=overwrite, committed="history.csv", resumable=False
    ):
        prov = DigitsServer(run.settings).provenance()
        write_text_atomic(run_toml(run, "flower-deployment", prov), run.out / "config.toml")
        run_strategy(grid, run)
