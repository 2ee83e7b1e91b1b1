"""The Digits-4 computations behind the Flower apps: the oracle's per-client work, split in two.

One implementation, two engines: the client side runs exactly what
:class:`fl_oracle.sim.oracle.Oracle` runs for one client (probe statistics at w_t, local training
with FedProx μ and γ-inexact stops on the mini-batch stream of (seed, round, client), the local
hold-out accuracy), the server side runs what the oracle runs on its validation and test sets
(U, U_<domain>, dU of w_t + Δ_i; test accuracy of the aggregate). The functions come from
:mod:`fl_oracle.sim` (``train_clients``, ``probe_stats``, ``correct_stacked``, ...).

What differs from the in-process oracle is the grouping, not the arithmetic: the oracle trains
the clients that share a step budget as one stacked model batch, a Flower node trains alone.
Stacked and single kernels round differently in float32 (measured: |ΔΔ| ≈ 1.5e-8 after one
local epoch, F within 2e-7 relative), which is the tolerance of the equivalence test
(``tests/fl_oracle/experiments/test_flower.py``).

The data: :class:`DigitsSettings` names the configuration (``OracleConfig`` TOML) and, for
tests, a file holding the domains' tensors (``save_data``); without it each process loads the
federation data as the oracle does (:func:`fl_oracle.sim.oracle.load_federation_data`, the
generated stand-ins come from the on-disk cache). Each process builds the partition once and
keeps it (:func:`federation`). In this simulation a client rebuilds the whole partition to find
its own shard; a deployed client would load only its local data.

Why one module past 450 lines: the client half and the server half are one computation
split in two, kept side by side so that a change to one is seen beside the other (the
equivalence test holds them to the oracle together); the settings and run-config readers at
the ends are what both halves are built from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.local import plan_steps, train_clients
from fl_oracle.sim.model import init_params, resolve_model
from fl_oracle.sim.partition import build_federation
from fl_oracle.sim.runtime import stream_seed
from fl_oracle.sim.stats import correct_stacked, probe_stats
from fl_oracle.sim.utilities import candidate_utilities
from selection.schema import F_FLOOR
from selection.words import counted

__all__ = [
    "DigitsSettings",
    "DigitsServer",
    "client_update",
    "client_probe",
    "federation",
    "local_federation",
    "save_data",
    "settings_from_run_config",
    "strategy_run_config",
    "RUN_CONFIG_STRATEGY",
    "RUN_CONFIG_FIELDS",
]


@dataclass(frozen=True)
class DigitsSettings:
    """What a Digits-4 client or server needs to rebuild its part of the federation.

    Attributes:
        config_toml: the :class:`OracleConfig` as TOML (``to_toml``).
        data_file: a file written by :func:`save_data` (tests, tiny data); None = load the
            data as the oracle does.
    """

    config_toml: str
    data_file: str | None = None

    @classmethod
    def of(cls, config: OracleConfig, data_file: str | Path | None = None) -> DigitsSettings:
        return cls(config.to_toml(), None if data_file is None else str(data_file))

    @property
    def config(self) -> OracleConfig:
        return OracleConfig.from_toml(self.config_toml)


def save_data(data: dict, path: str | Path) -> Path:
    """Write a ``{domain: {split: DomainData}}`` dict for :class:`DigitsSettings` (plain tensors)."""
    plain = {
        d: {
            s: {
                "images": torch.as_tensor(v.images),
                "labels": torch.as_tensor(v.labels),
                "source": str(getattr(v, "source", "generated")),
            }
            for s, v in splits.items()
        }
        for d, splits in data.items()
    }
    path = Path(path)
    torch.save(plain, path)
    return path


def _load_data(path: str) -> dict:
    from fl_oracle.sim.data import DomainData

    plain = torch.load(path, weights_only=True)
    return {
        d: {s: DomainData(d, s, v["images"], v["labels"], v["source"]) for s, v in splits.items()}
        for d, splits in plain.items()
    }


_CACHE: dict[DigitsSettings, tuple[Any, Any, dict]] = {}


def federation(settings: DigitsSettings) -> tuple[Any, Any, dict]:
    """(arch, Federation, data) of the settings, built once per process (CPU tensors)."""
    hit = _CACHE.get(settings)
    if hit is None:
        config = settings.config
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        if settings.data_file is not None:
            data = _load_data(settings.data_file)
        else:
            from fl_oracle.sim.loading import load_federation_data

            data = load_federation_data(config)
        device = torch.device("cpu")
        fed = build_federation(config, data, device)
        arch = resolve_model(config.model, n_classes=fed.n_classes, image_shape=fed.image_shape)
        hit = (arch, fed, data)
        _CACHE.clear()  # one federation per process
        _CACHE[settings] = hit
    return hit


_LOCAL: dict[tuple, tuple[Any, Any]] = {}


def local_federation(settings: DigitsSettings, data_root: str, domain: str) -> tuple[Any, Any]:
    """(arch, Federation of one client) from a deployed node's own files: the training split of
    ``domain`` under ``data_root``, in any real-file layout the oracle reads
    (:mod:`fl_oracle.sim.data.real`: MNIST IDX, USPS LIBSVM, SVHN/SYN ``.mat``, SYN folders,
    FedBN pickles). Every image but one is the client's (the partition needs one validation
    image); probe set, label histogram and standardization as the oracle builds them."""
    key = (settings, str(data_root), domain)
    hit = _LOCAL.get(key)
    if hit is None:
        from fl_oracle.errors import ConfigError
        from fl_oracle.sim.data import load_domain

        config = settings.config
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        train = load_domain(domain, "train", root=data_root, mode="real", standardize=True)
        if len(train) < 2:
            raise ConfigError(f"{data_root}: domain {domain} has {len(train)} training images")
        local = config.replace(
            domains=(domain,),
            clients_per_domain=1,
            samples_per_client={domain: len(train) - 1},
            val_per_domain=1,
            local_holdout=0,
            dataset=None,
            epoch_budgets=None,
        )
        fed = build_federation(
            local, {domain: {"train": train, "test": train}}, torch.device("cpu")
        )
        arch = resolve_model(config.model, n_classes=fed.n_classes, image_shape=fed.image_shape)
        hit = (arch, fed)
        _LOCAL.clear()
        _LOCAL[key] = hit
    return hit


def _client(settings: DigitsSettings, partition: int, own: tuple[str, str] | None):
    """(arch, federation, index) of a client: its shard of the simulated partition, or (a
    deployed node with ``own = (data_root, domain)``) its own files."""
    if own is None:
        arch, fed, _ = federation(settings)
        return arch, fed, _check(fed, partition)
    arch, fed = local_federation(settings, *own)
    return arch, fed, 0


def _single_probe(arch, w: torch.Tensor, fed, i: int):
    x, y = fed.xs[i][fed.probe[i]], fed.ys[i][fed.probe[i]]
    return probe_stats(arch, w, x, y, torch.zeros(len(y), dtype=torch.int64), 1)


def client_probe(
    settings: DigitsSettings, partition: int, w: np.ndarray, own: tuple[str, str] | None = None
) -> dict[str, Any]:
    """Probe statistics of one client at ``w``: loss, F and the mean loss gradient (P,)."""
    arch, fed, i = _client(settings, partition, own)
    p = _single_probe(arch, torch.as_tensor(w, dtype=torch.float32), fed, i)
    return {
        "loss": float(p.loss[0]),
        "F": max(float(p.fisher[0]), F_FLOOR),
        "grad": p.grad[0].numpy().astype(np.float32),
        "n_samples": int(fed.n_samples[i]),
    }


def client_first_order(
    settings: DigitsSettings,
    partition: int,
    w: np.ndarray,
    g: np.ndarray,
    *,
    lr: float | None = None,
    local_epochs: float | None = None,
    own: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The ``probe`` information model's pass on one client at ``w``: no training.

    Args:
        g: (D, P) the server's per-domain validation gradients grad L_d(w).
        lr, local_epochs: the server's (default the configuration's).

    Returns:
        ``client_id, domain, n_samples, loss, F, label_hist, steps`` (planned local steps),
        ``x`` (D,) = lr · steps · <grad L_i(w), g_d> (the first-order decrease of each
        domain's validation loss this client's update would bring, nats), ``cos_g`` (cosine
        of grad L_i with the domains' summed g_d, as the oracle's ``probe_table``) and
        ``probe_samples``.
    """
    arch, fed, i = _client(settings, partition, own)
    cfg = settings.config
    p = _single_probe(arch, torch.as_tensor(w, dtype=torch.float32), fed, i)
    cid = fed.client_ids[i] if own is None else f"{own[1]}-{int(partition)}"
    budget = cfg.budget(cid) if local_epochs is None else float(local_epochs)
    steps = plan_steps(int(fed.n_samples[i]), cfg.batch_size, budget)[1]
    grad = p.grad[0].double().numpy()
    gd = np.asarray(g, dtype=np.float64)
    ref = gd.sum(0)
    denom = float(np.linalg.norm(grad) * np.linalg.norm(ref))
    return {
        "client_id": cid,
        "domain": fed.client_domain[i],
        "n_samples": int(fed.n_samples[i]),
        "loss": float(p.loss[0]),
        "F": max(float(p.fisher[0]), F_FLOOR),
        "label_hist": [float(v) for v in fed.hist[i]],
        "steps": int(steps),
        "x": [float(v) for v in (cfg.lr if lr is None else float(lr)) * steps * (gd @ grad)],
        "cos_g": float(grad @ ref / denom) if denom > 0 else 0.0,
        "probe_samples": len(fed.probe[i]),
    }


def _check(fed, partition: int) -> int:
    if isinstance(partition, bool) or not 0 <= int(partition) < len(fed.client_ids):
        raise ValueError(
            f"partition {partition!r} is outside the federation's {len(fed.client_ids)} clients"
        )
    return int(partition)


def client_update(
    settings: DigitsSettings,
    partition: int,
    w: np.ndarray,
    *,
    round_: int,
    mu: float,
    lr: float | None = None,
    gamma: float | None = None,
    local_epochs: float | None = None,
    own: tuple[str, str] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """One client's candidate update at w_t and its own statistics, as the oracle computes them.

    Args:
        settings: the federation.
        partition: the client's index in federation order (its Flower partition id).
        w: (P,) float32 global model w_t.
        round_: the fedsel round t (keys the mini-batch stream).
        mu: FedProx proximal coefficient.
        lr, gamma, local_epochs: override the configuration's (the server sends them).
        own: ``(data_root, domain)`` of a deployed node that reads its own files
            (:func:`local_federation`); None = its shard of the simulated partition.

    Returns:
        Δ_i (P,) float32 and ``client_id, domain, n_samples, F, loss, steps, gamma_achieved,
        label_hist`` (10 counts), ``train_samples`` (sample-gradient evaluations of the local
        training), ``probe_samples`` (its probe batch) and ``U_local`` (% on the local
        hold-out; absent without one).
    """
    arch, fed, i = _client(settings, partition, own)
    cfg = settings.config
    wt = torch.as_tensor(w, dtype=torch.float32)
    probe = _single_probe(arch, wt, fed, i)
    cid = fed.client_ids[i] if own is None else f"{own[1]}-{int(partition)}"
    budget = cfg.budget(cid) if local_epochs is None else float(local_epochs)
    res = train_clients(
        arch,
        wt,
        [0],
        xs=[fed.xs[i]],
        ys=[fed.ys[i]],
        probes=[fed.probe[i]],
        budgets=[budget],
        seeds=[stream_seed(cfg.seed, round_, int(partition))],
        batch_size=cfg.batch_size,
        lr=cfg.lr if lr is None else float(lr),
        mu=float(mu),
        gamma=cfg.gamma if gamma is None else float(gamma),
        g0_norm=probe.grad.norm(dim=1),
    )
    delta, steps, ratio = res[0]
    n_i = int(fed.n_samples[i])
    b, planned = plan_steps(n_i, cfg.batch_size, budget)
    work = int(steps) * b  # the same count as the oracle's ``local_work``
    g = cfg.gamma if gamma is None else float(gamma)
    if g > 0:
        check = max(1, math.ceil(math.ceil(n_i / b) / 4))
        work += (min(int(steps), planned - 1) // check) * len(fed.probe[i])
    out: dict[str, Any] = {
        "client_id": cid,
        "domain": fed.client_domain[i],
        "n_samples": int(fed.n_samples[i]),
        "F": max(float(probe.fisher[0]), F_FLOOR),
        "loss": float(probe.loss[0]),
        "steps": int(steps),
        "gamma_achieved": float(ratio),
        "label_hist": [float(v) for v in fed.hist[i]],
        "train_samples": work,
        "probe_samples": len(fed.probe[i]),
    }
    if fed.local and len(fed.local[i][1]):
        x, y = fed.local[i]
        hits = correct_stacked(arch, wt.unsqueeze(0) + delta.unsqueeze(0), x, y)
        out["U_local"] = 100.0 * float(hits[0]) / len(y)
    return delta.numpy().astype(np.float32), out


class DigitsServer:
    """The server's side: the initial model, validation-set utilities and test accuracy.

    Holds only the validation and test sets of the federation (and the client ids and domains,
    which map Flower partition ids to fedsel client ids).
    """

    def __init__(self, settings: DigitsSettings) -> None:
        self.settings = settings
        self.config = settings.config
        self.arch, fed, self.data = federation(settings)
        self.domains = list(fed.domains)
        self.client_ids = list(fed.client_ids)
        self.client_domains = list(fed.client_domain)
        self.sources = dict(fed.sources)
        self._val = fed.val
        self._test = fed.test

    def initial_params(self) -> np.ndarray:
        """w_0, the oracle's initial model of the configuration's seed (P,) float32."""
        g = torch.Generator().manual_seed(self.config.seed)
        return init_params(self.arch, g).numpy()

    def _hits(self, W: torch.Tensor, split: str) -> tuple[np.ndarray, np.ndarray]:
        sets = self._val if split == "val" else self._test
        hits = [correct_stacked(self.arch, W, *sets[d]).cpu().numpy() for d in self.domains]
        return np.stack(hits, axis=1), np.array([len(sets[d][1]) for d in self.domains])

    def candidate_utilities(self, w: np.ndarray, deltas: np.ndarray) -> dict[str, np.ndarray]:
        """U, U_<domain> and dU (%) of each candidate w_t + Δ_i on the validation sets."""
        wt = torch.as_tensor(w, dtype=torch.float32)
        D = torch.as_tensor(deltas, dtype=torch.float32)
        hits, sizes = self._hits(wt.unsqueeze(0) + D, "val")
        hits0, _ = self._hits(wt.unsqueeze(0), "val")
        return candidate_utilities(hits, sizes, hits0[0], self.domains)

    def validation_gradients(
        self, w: np.ndarray
    ) -> tuple[np.ndarray, dict[str, float], dict[str, int]]:
        """What the server holds for the ``probe`` phase at w: the per-domain validation
        gradients grad L_d(w) (D, P) float32, its validation accuracy (%) per domain and the
        validation sizes (the oracle's ``probe_table`` computes the same)."""
        wt = torch.as_tensor(w, dtype=torch.float32)
        x = torch.cat([self._val[d][0] for d in self.domains])
        y = torch.cat([self._val[d][1] for d in self.domains])
        seg = torch.cat(
            [torch.full((len(self._val[d][1]),), j, dtype=torch.int64)
             for j, d in enumerate(self.domains)]
        )  # fmt: skip
        grads = probe_stats(self.arch, wt, x, y, seg, len(self.domains)).grad
        hits, sizes = self._hits(wt.unsqueeze(0), "val")
        acc = {d: float(100.0 * hits[0][j] / sizes[j]) for j, d in enumerate(self.domains)}
        return (
            grads.numpy().astype(np.float32),
            acc,
            {d: int(n) for d, n in zip(self.domains, sizes, strict=True)},
        )

    def test_metrics(self, w: np.ndarray) -> dict[str, float]:
        """``acc_<domain>``, ``acc_pooled``, ``acc_avg``, ``acc_worst`` (%) of w on the test sets."""
        from fl_oracle.sim.utilities import accuracy_metrics

        hits, sizes = self._hits(torch.as_tensor(w, dtype=torch.float32).unsqueeze(0), "test")
        return accuracy_metrics(hits[0], sizes, self.domains)

    def provenance(self) -> dict:
        """``{domain: {split: record}}`` of the data (as the oracle's ``provenance``)."""
        from fl_oracle.sim.data.provenance import data_provenance

        try:
            hollow = getattr(self.data, "hollow", None)  # a DomainStream: records, no pixels
            return data_provenance(
                {d: (hollow(d) if hollow else self.data[d]) for d in self.domains}
            )
        except Exception:  # tiny injected data may lack provenance fields
            return {}


# Every run-config key the apps read (``[tool.flwr.app.config]``, ``flwr run --run-config``),
# in this one place: the strategy's (key -> (type, default, meaning)) ...
RUN_CONFIG_STRATEGY: dict[str, tuple[type, Any, str]] = {
    "selector": (str, "maxmin:2", "selector spec (eps:5, maxmin:2@weighted, ...)"),
    "k": (int, 5, "nodes trained per round"),
    "num-server-rounds": (int, 3, "training rounds"),
    "num-partitions": (int, 0, "nodes, one per client (0: the connected nodes)"),
    "stats": (str, "", "fresh | stale | pool:P | probe | predicted; '': the spec's, else fresh"),
    "timeout": (float, 600.0, "seconds to wait for one exchange's replies"),
    "out": (str, "runs/flower", "run folder, relative to where the SuperLink runs"),
    "overwrite": (bool, False, "replace the run the folder holds"),
    "config-file": (str, "", "an OracleConfig TOML file: the whole configuration (fedsel flower)"),
    "data-file": (str, "", "a save_data file of the domains' tensors (tests)"),
    # private statistics (fl_oracle.experiments.privacy; the ClientApp's Mod reads them too)
    "dp-epsilon": (float, float("inf"), "the run's epsilon of the nodes' statistics (inf: off)"),
    "dp-delta": (float, 1e-5, "the run's delta"),
    "dp-seed": (int, -1, "the noise's seed (< 0: the operating system's entropy)"),
    "secure-aggregation": (bool, False, "the server sees only the sum of the updates"),
}
# ... and the oracle configuration's (key -> OracleConfig field).
RUN_CONFIG_FIELDS = {
    "seed": ("seed", int),
    "mu": ("mu", float),
    "gamma": ("gamma", float),
    "lr": ("lr", float),
    "local-epochs": ("local_epochs", float),
    "data": ("data_mode", str),
    "data-root": ("data_root", str),
    "model": ("model", str),
    "threads": ("threads", int),
    "dataset": ("dataset", str),
    "resolution": ("resolution", int),
}


def settings_from_run_config(run_config: Any, num_partitions: int | None = None) -> DigitsSettings:
    """:class:`DigitsSettings` of a Flower run config (the ``flwr run`` path).

    Keys of :data:`RUN_CONFIG_FIELDS` set the matching ``OracleConfig`` fields (``""`` and
    ``0``, the app config's defaults for "not set", keep the field's default); ``num_partitions`` (the node count) sets ``clients_per_domain`` =
    num_partitions / 4 and must be a multiple of the number of domains.
    """
    unknown = sorted(set(run_config) - set(RUN_CONFIG_FIELDS) - set(RUN_CONFIG_STRATEGY))
    if unknown:
        from selection.errors import did_you_mean

        known = sorted({*RUN_CONFIG_FIELDS, *RUN_CONFIG_STRATEGY})
        hint = did_you_mean(unknown[0], known) or f"; known: {', '.join(known)}"
        raise ValueError(f"run config key {unknown[0]!r} is not one fedsel reads{hint}")
    if run_config.get("config-file"):  # the whole configuration, as fedsel flower passes it
        text = Path(str(run_config["config-file"])).read_text(encoding="utf-8")
        return DigitsSettings(text, str(run_config.get("data-file") or "") or None)
    kw: dict[str, Any] = {"device": "cpu"}
    for key, (name, kind) in RUN_CONFIG_FIELDS.items():
        # "" and 0 are the app config's "not set" (TOML has no None): the default stays
        if key in run_config and run_config[key] not in ("", 0):
            kw[name] = kind(run_config[key])
    dataset = kw.pop("dataset", None)
    if num_partitions:
        n_dom = len(OracleConfig().domains) if dataset is None else len(_domains_of(dataset))
        if num_partitions % n_dom:
            raise ValueError(
                f"{counted(num_partitions, 'node')}: the federation has {counted(n_dom, 'domain')}, one node per "
                f"client, so it needs a multiple of {n_dom}"
            )
        kw["clients_per_domain"] = num_partitions // n_dom
    if dataset is not None:
        from fl_oracle.sim.config import dataset_fields

        kw = dataset_fields(dataset, **kw)
    return DigitsSettings.of(OracleConfig(**kw))


def _domains_of(dataset: str) -> tuple[str, ...]:
    from fl_oracle.sim.data.folders import scan_dataset

    return scan_dataset(dataset).domains


def strategy_run_config(run_config: Any) -> dict[str, Any]:
    """The strategy's run-config values (:data:`RUN_CONFIG_STRATEGY`), defaults filled in."""
    out = {}
    for key, (kind, default, _) in RUN_CONFIG_STRATEGY.items():
        value = run_config.get(key, default)
        if kind is bool and isinstance(value, str):
            value = value.lower() in ("1", "true", "yes")
        try:
            out[key] = kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"run config {key}={value!r} is not a {kind.__name__}") from None
    return out
