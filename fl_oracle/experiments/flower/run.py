"""Run the Digits-4 Flower apps: Flower's simulation engine (Ray) or the in-process grid.

``run_flower(run, num_supernodes)`` runs the ServerApp and ClientApp of this package with
``flwr run`` on a local SuperLink in simulation mode (``engine="ray"``: Flower's simulation
runtime, what flwr 1.42 recommends instead of the deprecated ``run_simulation``), or drives both
through
:class:`~fl_oracle.experiments.flower.local_grid.LocalGrid` (``engine="local"``). Either way the
history and statistics land in ``run.result`` (and in ``run.out`` after every round).

Ray is kept small and quiet: ``num_cpus`` CPUs for the whole simulation, ``client_cpus`` per
ClientApp actor, no dashboard, Ray's own logs at ERROR.
"""

from __future__ import annotations

import os

from fl_oracle.experiments.flower.client_app import make_client_app
from fl_oracle.experiments.flower.local_grid import LocalGrid
from fl_oracle.experiments.flower.server_app import FlowerResult, FlowerRun, run_strategy
from selection.words import counted

__all__ = ["ENGINES", "flower_log", "run_flower"]

ENGINES = ("ray", "local")
_RAY_QUIET = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
    "RAY_DISABLE_IMPORT_WARNING": "1",
    "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0",
    "TOKENIZERS_PARALLELISM": "false",
}


class _Noise:
    """Flower's notes that say nothing to a fedsel user (FedselStrategy is FedProx with the
    run's mu; mu = 0, fedsel's FedAvg, draws Flower's 'equivalent to FedAvg' warning)."""

    def filter(self, record) -> bool:
        return "initialized with `proximal_mu=0.0`" not in str(record.getMessage())


def flower_log(verbose: bool = False) -> None:
    """Flower's console log as fedsel shows it: warnings and errors only (its INFO lines, about
    48 per run, with ``verbose``, or at the level Flower's own ``FLWR_LOG_LEVEL`` names), in
    colour only where its stream is a terminal (no raw ANSI codes in a log file or a pipe)."""
    import logging

    from flwr.common.logger import LOGGER_NAME, ConsoleHandler

    for handler in logging.getLogger(LOGGER_NAME).handlers:
        if not isinstance(handler, ConsoleHandler):
            continue
        if not os.getenv("FLWR_LOG_LEVEL"):
            handler.setLevel(logging.INFO if verbose else logging.WARNING)
        isatty = getattr(getattr(handler, "stream", None), "isatty", None)
        handler.colored = bool(isatty and isatty())
        handler.filters = [f for f in handler.filters if not isinstance(f, _Noise)]
        if not verbose:
            handler.addFilter(_Noise())


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
        raise ValueError(f"K={run.k} exceeds the {counted(num_supernodes, 'node')}")
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} must be one of {', '.join(ENGINES)}")
    client_app = make_client_app(run.settings, getattr(run, "privacy", None))
    if engine == "local":
        run_strategy(LocalGrid(client_app, num_supernodes), run)
        return run.result
    return _run_flwr(run, num_supernodes, num_cpus=num_cpus, client_cpus=client_cpus)


def _run_flwr(
    run: FlowerRun, num_supernodes: int, *, num_cpus: int | None, client_cpus: float
) -> FlowerResult:
    """Flower's simulation runtime as flwr 1.42 recommends it: ``flwr run`` of this project's
    apps (``[tool.flwr.app]`` in ``pyproject.toml``) on a local SuperLink in simulation mode,
    with its own ``FLWR_HOME``; the configuration travels as a file named in the run config,
    and the history is read back from the run folder the ServerApp writes."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import pandas as pd

    from selection.toml_text import toml_value

    root = Path(__file__).resolve().parents[3]
    flwr = shutil.which("flwr", path=str(Path(sys.executable).parent)) or shutil.which("flwr")
    if not (root / "pyproject.toml").is_file() or flwr is None:
        # installed from a wheel (no project folder to build the Flower app from), or no flwr
        # command: Flower's in-process simulation entry point, deprecated but working
        return _run_simulation(run, num_supernodes, num_cpus=num_cpus, client_cpus=client_cpus)
    cpus = int(num_cpus or os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="fedsel-flwr-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "home").mkdir()
        config_file = tmp / "config.toml"
        config_file.write_text(run.settings.config_toml, encoding="utf-8")
        out = tmp / "out"
        rc = {
            "selector": run.selector,
            "k": int(run.k),
            "num-server-rounds": int(run.rounds),
            "num-partitions": int(num_supernodes),
            "stats": run.stats,
            "timeout": float(run.timeout),
            "out": str(out),
            "config-file": str(config_file),
            "data-file": run.settings.data_file or "",
        }
        privacy = getattr(run, "privacy", None)  # a run-like object may carry none
        if privacy is not None:  # the nodes' Mod and the ServerApp read them
            rc.update({"dp-delta": float(privacy.delta),
                       "secure-aggregation": bool(privacy.secure_aggregation),
                       "dp-seed": int(run.settings.config.seed)})  # fmt: skip
            if privacy.on:
                rc["dp-epsilon"] = float(privacy.epsilon)
        fed = (
            f"num-supernodes={int(num_supernodes)} "
            f"client-resources-num-cpus={toml_value(_number(client_cpus))} "
            f"init-args-num-cpus={cpus} init-args-logging-level='ERROR' "
            "init-args-log-to-driver=false"
        )
        env = {
            **os.environ,
            **_RAY_QUIET,
            # a SuperLink of its own: its own home, and its HTTP and Control APIs on free ports
            # (flwr's defaults, 39091/39093, would hand the run to any local SuperLink
            # already answering there)
            "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(_free_port()),
            "FLWR_LOCAL_CONTROL_API_PORT": str(_free_port()),
            "FLWR_HOME": str(tmp / "home"),
            "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        cmd = [flwr, "run", str(root), "--federation-config", fed, "--run-config",
               " ".join(f"{k}={toml_value(v)}" for k, v in rc.items()), "--stream"]  # fmt: skip
        try:
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        finally:  # flwr run leaves its local SuperLink running in the background: stop it
            _stop_local_superlink(tmp / "home")
        history = out / "history.csv"
        if history.is_file():
            text = ("selected", "failed", "failures", "fallback")
            # read as text: an all-empty column would otherwise come back as float NaN
            h = pd.read_csv(history, dtype={c: str for c in text})
            for c in text:
                if c in h.columns:
                    h[c] = h[c].fillna("").astype(str)
            st = pd.read_parquet(out / "stats.parquet")
            run.result.history[:] = h.to_dict("records")
            run.result.tables[:] = [g.reset_index(drop=True) for _, g in st.groupby("round")]
        if proc.returncode != 0 or len(run.result.history) < run.rounds:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise RuntimeError(
                f"the Flower simulation ended after {len(run.result.history)} of "
                f"{counted(run.rounds, 'round')} (flwr run exit {proc.returncode}): "
                f"{' | '.join(tail)}"
            )
    return run.result


def _free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 (the kernel's choice)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _number(v: float) -> int | float:
    """An integral float as an int (flwr's federation config takes whole CPU counts as ints)."""
    return int(v) if float(v).is_integer() else float(v)


def _run_simulation(
    run: FlowerRun, num_supernodes: int, *, num_cpus: int | None, client_cpus: float
) -> FlowerResult:
    """The same apps through :func:`flwr.simulation.run_simulation` (deprecated in flwr 1.42;
    used only where ``flwr run`` cannot build the app: see :func:`_run_flwr`)."""
    import warnings

    from flwr.simulation import run_simulation

    from fl_oracle.experiments.flower.server_app import make_server_app

    for key, value in _RAY_QUIET.items():
        os.environ.setdefault(key, value)
    cpus = int(num_cpus or os.cpu_count() or 1)
    backend_config = {
        "client_resources": {"num_cpus": float(client_cpus), "num_gpus": 0.0},
        "init_args": {"num_cpus": cpus, "num_gpus": 0, "include_dashboard": False,
                      "logging_level": "ERROR", "log_to_driver": False},
    }  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        run_simulation(
            server_app=make_server_app(run),
            client_app=make_client_app(run.settings),
            num_supernodes=num_supernodes,
            backend_config=backend_config,
        )
    if len(run.result.history) < run.rounds:
        raise RuntimeError(
            f"the Flower simulation ended after {len(run.result.history)} of {counted(run.rounds, 'round')}"
        )
    return run.result


def _stop_local_superlink(home) -> None:
    """Terminate the local SuperLink ``flwr run`` started under ``FLWR_HOME=home`` (it stays up
    after the run by design) and the processes it started (read from ``/proc``; elsewhere a
    no-op)."""
    import signal
    import time
    from pathlib import Path

    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return
    parent: dict[int, int] = {}
    mine: set[int] = set()
    for d in proc_dir.iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        if str(home) in cmd:
            mine.add(int(d.name))
    grown = True
    while grown:  # and their descendants
        kids = {pid for pid, pp in parent.items() if pp in mine} - mine
        grown = bool(kids)
        mine |= kids
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in mine:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in mine):
            time.sleep(0.1)
