"""Run the Digits-4 Flower apps: Flower's simulation engine (Ray) or the in-process grid.

``run_flower(run, num_supernodes)`` starts :func:`flwr.simulation.run_simulation` with the
ServerApp and ClientApp of this package (``engine="ray"``), or drives both through
:class:`~fl_oracle.experiments.flower.local_grid.LocalGrid` (``engine="local"``). Either way the
history and statistics land in ``run.result`` (and in ``run.out`` after every round).

Ray is kept small and quiet: ``num_cpus`` CPUs for the whole simulation, ``client_cpus`` per
ClientApp actor, no dashboard, Ray's own logs at ERROR.
"""

from __future__ import annotations

import os

from fl_oracle.experiments.flower.client_app import make_client_app
from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.server_app import (
    FlowerResult,
    FlowerRun,
    make_server_app,
    run_strategy,
)

__all__ = ["ENGINES", "run_flower"]

ENGINES = ("ray", "local")
_RAY_QUIET = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
    "RAY_DISABLE_IMPORT_WARNING": "1",
    "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
    "TOKENIZERS_PARALLELISM": "false",
}


def run_flower(
    run: FlowerRun,
    num_supernodes: int,
    *,
    engine: str = "ray",
    num_cpus: int | None = None,
    client_cpus: float = 1.0,
) -> FlowerResult:
    """Run ``run`` on ``num_supernodes`` Flower nodes (one per fedsel client).

    Args:
        run: the run (federation, selector, K, rounds, ...).
        num_supernodes: nodes; must equal the federation's client count.
        engine: ``ray`` (Flower's simulation engine) or ``local`` (:class:`LocalGrid`).
        num_cpus: CPUs Ray may use (default: all of this machine's).
        client_cpus: CPUs reserved per ClientApp actor (actors = num_cpus / client_cpus).

    Returns:
        ``run.result``.
    """
    n_clients = len(run.settings.config.client_ids)
    if num_supernodes != n_clients:
        raise ValueError(
            f"--num-supernodes {num_supernodes} must equal the federation's {n_clients} clients"
        )
    if run.k > num_supernodes:
        raise ValueError(f"K={run.k} exceeds the {num_supernodes} nodes")
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} must be one of {', '.join(ENGINES)}")
    client_app = make_client_app(run.settings)
    if engine == "local":
        run_strategy(LocalGrid(client_app, num_supernodes), run)
        return run.result
    for key, value in _RAY_QUIET.items():
        os.environ.setdefault(key, value)
    from flwr.simulation import run_simulation

    cpus = int(num_cpus or os.cpu_count() or 1)
    backend_config = {
        "client_resources": {"num_cpus": float(client_cpus), "num_gpus": 0.0},
        "init_args": {
            "num_cpus": cpus,
            "num_gpus": 0,
            "include_dashboard": False,
            "logging_level": "ERROR",
            "log_to_driver": False,
        },
    }
    run_simulation(
        server_app=make_server_app(run),
        client_app=client_app,
        num_supernodes=num_supernodes,
        backend_config=backend_config,
    )
    if len(run.result.history) < run.rounds:
        raise RuntimeError(
            f"the Flower simulation ended after {len(run.result.history)} of {run.rounds} rounds"
        )
    return run.result
