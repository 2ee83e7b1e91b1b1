"""What ran: fedsel version and git commit, Python, torch, device and thread count.

:func:`run_record` gathers it once per run; :func:`record_toml` writes it as the ``[run]`` table
of a run folder's ``config.toml`` (``OracleConfig.from_toml`` skips it), and the demo report
shows it in its set-up table; :func:`describe_setup` describes a run's federation (the demo's
and the study's set-up sections).
"""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["ISA_PINS", "describe_setup", "git_commit", "record_toml", "run_record"]

#: environment variables that pin the kernels' instruction set (ATen's CPU dispatch, MKL's
#: conditional numerical reproducibility, oneDNN's ISA): recorded in every run when set
ISA_PINS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")


def git_commit(where: str | Path | None = None) -> str:
    """HEAD of the checkout holding fedsel (``<sha>`` or ``<sha>-dirty``; '' if not a checkout)."""
    where = Path(where) if where is not None else Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{sha}-dirty" if dirty else sha


def _version(pkg: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return ""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_record(device: Any = None, *, command: str = "") -> dict[str, Any]:
    """The run record.

    Args:
        device: the compute device used (``torch.device`` or its name); None = not known.
        command: the command line, if the caller wants it kept.

    Returns:
        ``fedsel_version, git_commit, python, platform, cpu`` (model name), ``torch_cpu``
        (torch's CPU capability, e.g. AVX512: the kernels it runs), ``torch_version``,
        ``numpy_version``, ``scipy_version``, ``isa_pins`` (the instruction-set pins set in
        the environment, :data:`ISA_PINS`: ``NAME=value; ...``, '' when none), ``device,
        threads, started`` (UTC, ISO 8601) and ``command`` when given. Runs are
        bit-identical on one host, not across hosts: ``cpu``, ``torch_cpu`` and the versions
        tell them apart (docs: "What reproduces where").
    """
    import os

    import torch

    rec: dict[str, Any] = {
        "fedsel_version": _version("fedsel"),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "torch_cpu": str(torch.backends.cpu.get_cpu_capability()),
        "torch_version": torch.__version__,
        "numpy_version": _version("numpy"),
        "scipy_version": _version("scipy"),
        "isa_pins": "; ".join(f"{k}={os.environ[k]}" for k in ISA_PINS if os.environ.get(k)),
        "device": "" if device is None else str(device),
        "threads": int(torch.get_num_threads()),
        "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if command:
        rec["command"] = command
    return rec


def record_toml(rec: dict[str, Any]) -> str:
    """The record as the TOML table ``[run]``."""

    from selection.toml_text import toml_value

    return "[run]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in rec.items()) + "\n"


def describe_setup(oracle: Any) -> dict:
    """The federation as the report's set-up section shows it.

    Returns:
        ``domains``, ``sources`` (domain -> real / generated stand-in), ``clients`` (domain ->
        clients, samples, mean samples per client, weight % under sample-weighted FedAvg),
        ``n_clients`` and the oracle's training settings (μ, γ, model, lr, ...).
    """
    clients = getattr(oracle, "clients", None)
    sources = dict(getattr(oracle, "sources", {}) or {})
    config = getattr(oracle, "config", None)
    setup: dict = {
        "domains": list(oracle.domains),
        "sources": {d: sources.get(d, "unknown") for d in oracle.domains},
    }
    prov = getattr(oracle, "provenance", None)
    if prov:  # kind, path/version, images and content hash per split, in the set-up table
        from fl_oracle.sim.data.provenance import short_source

        setup["provenance"] = {d: short_source(prov[d]) for d in oracle.domains if d in prov}
    if getattr(oracle, "device", None) is not None:
        rec = run_record(oracle.device)
        setup.update({f"run {k}": v for k, v in rec.items() if k not in ("started", "platform")})
    if clients is not None:
        per = clients.groupby("domain", sort=False)["n_samples"].agg(["count", "sum", "mean"])
        total = float(per["sum"].sum())
        setup["clients"] = {
            str(d): {
                "clients": int(r["count"]),
                "samples": int(r["sum"]),
                "mean": float(r["mean"]),
                "weight_pct": 100.0 * float(r["sum"]) / total,
            }
            for d, r in per.iterrows()
        }
        setup["n_clients"] = int(len(clients))
    keys = (
        "mu",
        "gamma",
        "adaptive_mu",
        "model",
        "lr",
        "batch_size",
        "local_epochs",
        "aggregation",
        "val_per_domain",
        "test_per_domain",
        "fisher_samples",
        "data_mode",
    )
    for key in keys:
        if config is not None and hasattr(config, key):
            v = getattr(config, key)
            setup[key] = v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
    return setup
