"""The options several commands share, declared once: help texts, the federation's flags and
``--no-progress``.

:data:`FEDERATION` declares every flag that describes the federation and its training (where
the data come from, how it is split among clients, the model, local training, evaluation): its
option, its type and the :class:`~fl_oracle.sim.config.OracleConfig` field it sets. A command
takes the ones it offers with :func:`federation_options` and receives the flags the user gave
as one mapping of configuration fields (:func:`make_config` reads it).
Nothing heavy is imported here: ``fedsel --help`` lists the commands without numpy or torch.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from fl_oracle.sim.architectures import model_help
from fl_oracle.sim.choices import DATA_HELP, DATA_MODES
from selection.cli.options import NO_PROGRESS

__all__ = [
    "DP_EPSILON",
    "DP_DELTA",
    "SECURE_AGGREGATION",
    "stats_privacy",
    "MODEL_HELP",
    "DATASET_HELP",
    "SPLIT_HELP",
    "SIZES_HELP",
    "NO_PROGRESS",
    "FederationFlag",
    "FEDERATION",
    "federation_options",
    "parse_sizes",
    "FLAG_OF",
    "make_config",
    "worker_count",
]

# the privacy mode of the clients' reported statistics (fl_oracle.experiments.privacy)
DP_EPSILON = typer.Option(
    float("inf"),
    "--dp-epsilon",
    help="Private statistics: the run's ε over its rounds (every reported statistic clipped "
    "and noised; Opacus' RDP accountant). inf = off.",
    show_default=False,
)
DP_DELTA = typer.Option(1e-5, "--dp-delta", help="The run's delta of --dp-epsilon.")
SECURE_AGGREGATION = typer.Option(
    False,
    "--secure-aggregation",
    help="The server sees only the sum of the updates (every information model but probe "
    "refused; probe uncalibrated).",
)


def stats_privacy(
    epsilon: float, delta: float, rounds: int, secure: bool, stats: str | None = None, spec=None
):
    """The run's :class:`~fl_oracle.experiments.privacy.StatsPrivacy` from the flags (None
    when off), checked against its information model ``stats`` (None: the caller checks it),
    and for a baseline rule (``spec``, run as ``rule``) against what it reads: a bad value is
    one line, exit 2, before any data."""
    import math

    if not (isinstance(delta, float) and 0 < delta < 1):
        raise typer.BadParameter(
            f"delta={delta!r} must be a number in (0, 1)", param_hint="--dp-delta"
        )
    if math.isinf(epsilon) and epsilon > 0 and not secure:
        return None
    from fl_oracle.experiments.privacy import StatsPrivacy

    try:
        privacy = StatsPrivacy(
            epsilon=epsilon, delta=delta, rounds=rounds, secure_aggregation=secure
        )
    except ValueError as exc:
        why = str(exc).removeprefix("privacy: ")
        hint = "--dp-delta" if why.startswith("delta") else "--dp-epsilon"
        raise typer.BadParameter(why, param_hint=hint) from None
    if spec is not None:  # a rule reading update vectors and the model served, refused now
        privacy.check_spec(spec, stats)
    elif stats is not None:
        privacy.check_information(str(stats))
    return privacy


MODEL_HELP = model_help()
DATASET_HELP = "Folder of image folders (DOMAIN/CLASS/images) used instead of Digits-4."
SPLIT_HELP = "CSV path,split fixing the --dataset train/test split (default: 20% test)."
SIZES_HELP = "Training samples per client: N, or domain=N pairs (mnist=600,usps=72)."
SIZE_SIGMA_HELP = "Log-normal spread σ of the client sizes around --samples-per-client."


def parse_sizes(text: str | None) -> int | dict[str, int] | None:
    """``--samples-per-client``: None, one integer, or ``domain=n`` pairs (typer error if bad)."""
    from fl_oracle.sim.sizes import sizes_from_text

    if text is None:
        return None
    try:
        return sizes_from_text(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--samples-per-client") from None


def _data_mode(value: str) -> str:
    if value not in DATA_MODES:
        raise typer.BadParameter(
            f"{value!r} is not one of {', '.join(DATA_MODES)}", param_hint="--data"
        )
    return value


@dataclass(frozen=True)
class FederationFlag:
    """One federation flag.

    Attributes:
        field: the :class:`~fl_oracle.sim.config.OracleConfig` field it sets.
        annotation: the command parameter's type (always optional: unset leaves the field to
            the configuration's default, or to what the command starts from).
        flag: the option's name on the command line.
        help: the help text.
        option: further ``typer.Option`` keywords (bounds, the default shown).
        convert: the given value -> the field's (a path as text, sizes parsed, a check).
    """

    field: str
    annotation: Any
    flag: str
    help: str
    option: Mapping[str, Any]
    convert: Callable[[Any], Any]

    def make(self, **own: Any) -> Any:
        """A new ``typer.Option`` for one command (``own`` keywords replace the shared ones:
        a command's own help text)."""
        return typer.Option(None, self.flag, **{"help": self.help, **self.option, **own})


def _same(value: Any) -> Any:
    return value


def _flag(field: str, annotation: Any, flag: str, help: str, *,
          convert: Callable[[Any], Any] = _same, **option: Any) -> FederationFlag:  # fmt: skip
    return FederationFlag(field, annotation, flag, help, option, convert)


#: every federation flag, by the command parameter that takes it
FEDERATION: dict[str, FederationFlag] = {
    "data_root": _flag("data_root", Path | None, "--data-root",
                       "Folder with the real digit datasets.", convert=str),
    "data": _flag("data_mode", str | None, "--data", DATA_HELP, convert=_data_mode,
                  show_default="auto"),
    "dataset": _flag("dataset", Path | None, "--dataset", DATASET_HELP, convert=str),
    "resolution": _flag("resolution", int | None, "--resolution",
                        "Side --dataset images are resized to.", min=4, show_default="32"),
    "split_file": _flag("split_file", Path | None, "--split-file", SPLIT_HELP, convert=str),
    "clients_per_domain": _flag("clients_per_domain", int | None, "--clients-per-domain",
                                "Clients of each domain.", min=1, show_default="5"),
    "samples_per_client": _flag("samples_per_client", str | None, "--samples-per-client",
                                SIZES_HELP, convert=parse_sizes,
                                show_default="1% of each Digits-4 set"),
    "dirichlet_alpha": _flag("dirichlet_alpha", float | None, "--dirichlet-alpha",
                             "Label skew.", show_default="none"),
    # its bounds (0 ... 3) are the configuration's, named with the flag (a range here would
    # widen every option's type column in --help)
    "size_sigma": _flag("size_sigma", float | None, "--size-sigma", SIZE_SIGMA_HELP,
                        show_default="0"),
    "val_per_domain": _flag("val_per_domain", int | None, "--val-per-domain",
                            "Validation images per domain (the U readings).", min=1,
                            show_default="500; --dataset: 15% of its smallest, ≤ 500"),
    "test_per_domain": _flag("test_per_domain", int | None, "--test-per-domain",
                             "Test images per domain (realized accuracy).", min=1,
                             show_default="the whole test split"),
    "model": _flag("model", str | None, "--model", MODEL_HELP, show_default="cnn"),
    "lr": _flag("lr", float | None, "--lr", "Local SGD step size.", min=0.0,
                show_default="0.05"),
    "batch_size": _flag("batch_size", int | None, "--batch-size", "Local minibatch size.",
                        min=1, show_default="32"),
    "local_epochs": _flag("local_epochs", float | None, "--local-epochs",
                          "Local epoch budget per round.", min=0.0, show_default="1"),
    "mu": _flag("mu", float | None, "--mu", "FedProx proximal coefficient μ (0 = FedAvg).",
                min=0.0, show_default="0"),
    "gamma": _flag("gamma", float | None, "--gamma",
                   "γ-inexactness of local solving (0 = off).", min=0.0, show_default="0"),
    "aggregation": _flag("aggregation", str | None, "--aggregation", "samples | uniform.",
                         show_default="samples"),
    # 0 reaches the configuration as None: every sample probed
    "fisher_samples": _flag("fisher_samples", int | None, "--fisher-samples",
                            "Probe samples per client for F, loss and gradients (0 = all).",
                            convert=lambda v: v or None, min=0, show_default="64"),
    "device": _flag("device", str | None, "--device", "auto | cpu | cuda.",
                    show_default="auto"),
    "threads": _flag("threads", int | None, "--threads", "torch threads.", min=1,
                     show_default="torch's default"),
}  # fmt: skip


def federation_options(*names: str, **own: Mapping[str, Any]):
    """Give a command these :data:`FEDERATION` flags.

    The command declares one parameter ``federation`` where the flags stand in its ``--help``
    and receives, through it, the flags the user gave: configuration field -> converted value
    (a flag left out is absent; ``--fisher-samples 0`` is present as None).

    Args:
        names: keys of :data:`FEDERATION`, in the order ``--help`` lists them.
        own: a command's own ``typer.Option`` keywords for some of them, by name (the help of
            ``--threads`` for Flower's nodes).
    """
    unknown = [n for n in (*names, *own) if n not in FEDERATION]
    if unknown:
        raise ValueError(f"no federation flag {unknown[0]!r} (known: {', '.join(FEDERATION)})")

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(command, eval_str=True)
        if "federation" not in sig.parameters:
            raise TypeError(f"{command.__name__} declares no 'federation' parameter")
        params: list[inspect.Parameter] = []
        for p in sig.parameters.values():
            if p.name != "federation":
                params.append(p)
                continue
            for n in names:
                flag = FEDERATION[n]
                params.append(inspect.Parameter(n, p.kind, default=flag.make(**own.get(n, {})),
                                                annotation=flag.annotation))  # fmt: skip

        @functools.wraps(command)
        def with_federation(**kw: Any) -> Any:
            given = {}
            for n in names:
                value = kw.pop(n)
                if value is not None:
                    given[FEDERATION[n].field] = FEDERATION[n].convert(value)
            return command(**kw, federation=given)

        with_federation.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        with_federation.__annotations__ = {p.name: p.annotation for p in params}
        return with_federation

    return decorate


def make_config(seed: int, federation: Mapping[str, Any] | None = None, **overrides: Any):
    """An :class:`fl_oracle.sim.config.OracleConfig` for ``seed``: the federation flags the
    user gave (:func:`fl_oracle.cli.options.federation_options`; None kept, e.g. every sample
    probed), then the non-None ``overrides``; with ``dataset`` its domains and sizes are
    filled in from the folder."""
    from fl_oracle.errors import ConfigError, hinted_why

    try:
        return _config(seed, federation, overrides)
    except ConfigError as exc:  # the flag the user typed, not the configuration's field
        flag = FLAG_OF.get(exc.field)
        if not flag:
            raise
        why = hinted_why(exc)  # --model resnet19: ...; did you mean 'resnet18'?
        raise ConfigError(f"{flag} {exc.value}: {why}", field=exc.field, value=exc.value,
                          why=why) from None  # fmt: skip


#: a configuration field -> the flag that sets it (the federation flags, --k and --seed)
FLAG_OF: dict[str, str] = {
    **{f.field: f.flag for f in FEDERATION.values()},
    "k": "--k",
    "seed": "--seed",
}


def _config(seed: int, federation: Mapping[str, Any] | None, overrides: Mapping[str, Any]):
    from fl_oracle.sim.config import OracleConfig, dataset_fields

    given = {**(federation or {}), **{k: v for k, v in overrides.items() if v is not None}}
    if given.get("dataset") is not None:
        given = dataset_fields(given.pop("dataset"), **given)
    if isinstance(given.get("samples_per_client"), int):  # one size for every domain
        domains = given.get("domains") or OracleConfig().domains
        given["samples_per_client"] = {d: given["samples_per_client"] for d in domains}
    return OracleConfig(seed=int(seed), **given)


def worker_count(workers: int | None, runs: int) -> int:
    """The worker processes of a multi-run command: the ``--workers`` given, else one per run
    up to the CPUs and at most 8 (the one rule of train, study and grid).

    Examples:
        >>> from fl_oracle.cli.options import worker_count
        >>> worker_count(3, 100), worker_count(None, 1)
        (3, 1)
    """
    import os

    return workers or max(1, min(os.cpu_count() or 1, 8, runs))
