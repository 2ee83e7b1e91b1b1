"""The oracle's configuration: one frozen, keyword-only dataclass validated at construction.

Every field is checked in ``__post_init__``; a bad value raises :class:`ConfigError` naming the
field. ``to_toml``/``from_toml`` round-trip the configuration exactly (the run folder keeps it
as ``config.toml``, and ``--resume`` refuses a folder written with another configuration).

Why one module past 450 lines: the dataclass is the one place where each of its ~30
settings is declared, documented and checked (the commands' flags, studies' ``[oracle]``
tables and run folders all read it); :func:`dataset_fields` fills those fields from a dataset
folder.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Any

import numpy as np

from fl_oracle.errors import ConfigError
from fl_oracle.sim.architectures import generic_names, stacked_names
from fl_oracle.sim.choices import DATA_MODES
from selection.schema import DEFAULT_DOMAINS, DEFAULT_SAMPLES_PER_CLIENT
from selection.toml_text import toml_key, toml_value

__all__ = [
    "OracleConfig",
    "small_config",
    "DEFAULT_SAMPLES_PER_CLIENT",
    "MODELS",
    "GENERIC_MODELS",
    "FISHER_METHODS",
    "dataset_fields",
]

MODELS: tuple[str, ...] = stacked_names()  # built-in, hand-made stacked path
# generic nn.Modules through torch.func (fl_oracle.sim.torch_model); or "module:factory"
GENERIC_MODELS: tuple[str, ...] = generic_names()
_DATA_MODES = DATA_MODES
_DEVICES = ("auto", "cpu", "cuda")
_AGGREGATIONS = ("samples", "uniform")
# the largest image side a dataset is resized to: 512 x 512 x 3 float32 is 3 MiB an image
MAX_RESOLUTION = 512
FISHER_METHODS: tuple[str, ...] = ("layerwise", "vmap")
# The most clients a simulated federation holds (clients per domain x domains): each client is
# a row of every round's table and holds its own shard and hold-out images (3 KiB each), so ten
# million need at least 30 GiB; beyond it a size is refused by arithmetic, before the
# per-client tables (client_sizes, the partition) are built; below it check_fits compares
# the images with the machine's memory.
MAX_CLIENTS = 10**7
# The most local epochs a client runs in one round: its steps (epochs x samples / batch) are
# counted in 64-bit integers, and 10^4 epochs of the largest federation that fits in memory
# stay far inside them (1e300 ended in an OverflowError after the run folder was claimed).
MAX_LOCAL_EPOCHS = 10**4
# torch's intra-op threads are a C int, and no machine has more cores than this.
MAX_THREADS = 4096
# Tables a run folder's config.toml may carry beside the configuration (data provenance and
# the run record, see fl_oracle.sim.data.provenance and fl_oracle.experiments.run_record).
RECORD_TABLES: tuple[str, ...] = ("sources", "run", "selection", "privacy")


def _err(name: str, value: Any, why: str) -> ConfigError:
    return ConfigError(f"config field {name}={value!r}: {why}", field=name, value=value, why=why)


@dataclass(frozen=True, kw_only=True)
class OracleConfig:
    """Settings of one federated simulation (the round-stats contract it feeds: ``docs/contract.md``).

    Attributes:
        seed: seed of the partition, the initial model and every local training stream.
        data_seed: seed of the generated stand-in data (fixed so that runs share one dataset).
        domains: domain names, a subset of the data module's ``DOMAINS``.
        clients_per_domain: clients drawn from each domain (disjoint samples).
        samples_per_client: training samples per client, by domain (default 1% of each set).
        dirichlet_alpha: Dirichlet(alpha) label skew within each domain; None = iid draw.
        size_sigma: log-normal spread of the client sizes: client i of a domain holds
            max(1, round(n_d · exp(σ z_i − σ²/2))) samples (z_i standard normal, drawn from
            ``data_seed``: every seed of a study shares the sizes), n_d its
            ``samples_per_client`` (the mean); 0 = every client n_d (the Digits-4 default).
        val_per_domain: validation samples per domain (held out from the training split).
        local_holdout: local hold-out samples per client (drawn from the client's domain with
            the client's own class mix, disjoint from every shard and the validation subset);
            the oracle reports ``U_local``, the accuracy of w_t + Δ_i on it. 0 = none.
        test_per_domain: test samples per domain; None = the full test split.
        data_root: folder with the real dataset files; None = generated stand-ins only.
        data_mode: ``auto`` | ``real`` | ``generated``.
        dataset: a domain-structured image folder ``DIR/<domain>/<class>/*.png``
            (:mod:`fl_oracle.sim.data.folders`) used instead of the Digits-4 sources; its
            domains are the folder's (:meth:`for_dataset` fills ``domains`` and the sizes).
        resolution: side of the square images a ``dataset`` is resized to.
        split_file: CSV ``path,split`` fixing a ``dataset``'s train/test split.
        test_fraction: a ``dataset``'s test share per (domain, class) without a split file.
        model: a built-in CNN (``MODELS``), a generic model
            (:data:`fl_oracle.sim.torch_model.ZOO`) or ``module:factory``.
        lr: local SGD step size.
        batch_size: local mini-batch size (a client smaller than it uses its whole set).
        local_epochs: local epoch budget of every client (fractions allowed).
        epoch_budgets: per-client (``"svhn-3"``) or per-domain (``"svhn"``) epoch budgets that
            override ``local_epochs`` (stragglers); a client id wins over its domain.
        mu: proximal coefficient of FedProx (0 = FedAvg).
        adaptive_mu: +0.1 when the global loss rises, -0.1 after 5 consecutive drops.
        gamma: gamma-inexact stop when ||grad h|| <= gamma ||grad h(w_t)||; 0 disables it.
        k: clients per round for ``fedsel oracle`` (None = all).
        aggregation: ``samples`` (weights proportional to n_samples) or ``uniform``.
        fisher_samples: per-client probe-set size for F, loss and gradients (None = all).
        fisher_method: per-sample gradients from layer inputs and output gradients
            (``layerwise``, fast) or ``torch.func.vmap(grad)`` (``vmap``); equal values.
        device: ``auto`` (cuda when available) | ``cpu`` | ``cuda``.
        threads: torch intra-op threads and the BLAS/OpenMP pools of numpy and scipy (the
            predicted model's Gaussian process), None = leave their defaults. Two runs on two
            cores with BLAS left at two threads each oversubscribe the cores
            (results/benchmarks/study_round.md).

    Examples:
        >>> from fl_oracle.sim.config import OracleConfig
        >>> config = OracleConfig(domains=("mnist", "usps"), clients_per_domain=2,
        ...                       samples_per_client=20)
        >>> config.n_clients, config.client_ids
        (4, ('mnist-0', 'mnist-1', 'usps-0', 'usps-1'))
        >>> config.samples_per_client, config.train_needed()  # + 2 x 100 hold-out + 500 val
        ({'mnist': 20, 'usps': 20}, {'mnist': 740, 'usps': 740})
        >>> OracleConfig.from_toml(config.to_toml()) == config, config.replace(lr=0.1).lr
        (True, 0.1)
        >>> config.replace(k=5)
        Traceback (most recent call last):
        ...
        fl_oracle.errors.ConfigError: config field k=5: exceeds the 4 clients
    """

    seed: int = 0
    data_seed: int = 0
    domains: tuple[str, ...] = DEFAULT_DOMAINS
    clients_per_domain: int = 5
    samples_per_client: Mapping[str, int] | None = None
    dirichlet_alpha: float | None = None
    size_sigma: float = 0.0
    val_per_domain: int = 500
    local_holdout: int = 100
    test_per_domain: int | None = None
    data_root: str | None = None
    data_mode: str = "auto"
    dataset: str | None = None
    resolution: int = 32
    split_file: str | None = None
    test_fraction: float = 0.2
    model: str = "cnn"
    lr: float = 0.05
    batch_size: int = 32
    local_epochs: float = 1.0
    epoch_budgets: Mapping[str, float] | None = None
    mu: float = 0.0
    adaptive_mu: bool = False
    gamma: float = 0.0
    k: int | None = None
    aggregation: str = "samples"
    fisher_samples: int | None = 64
    fisher_method: str = "layerwise"
    device: str = "auto"
    threads: int | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("seed", "data_seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise _err(name, v, "must be an integer >= 0")
        doms = tuple(self.domains) if not isinstance(self.domains, str) else (self.domains,)
        if not doms or any(not isinstance(d, str) or not d for d in doms):
            raise _err("domains", self.domains, "must be a non-empty list of domain names")
        if len(set(doms)) != len(doms):
            raise _err("domains", self.domains, "lists a domain twice")
        set_(self, "domains", doms)
        self._check_int("clients_per_domain", 1)
        if self.clients_per_domain * len(doms) > MAX_CLIENTS:
            raise _err(
                "clients_per_domain",
                self.clients_per_domain,
                f"{len(doms)} domains x {self.clients_per_domain:,} clients exceed the "
                f"{MAX_CLIENTS:,} clients a simulated federation holds",
            )
        self._check_int("val_per_domain", 1)
        self._check_int("local_holdout", 0)
        self._check_int("batch_size", 1)
        for name in ("test_per_domain", "fisher_samples", "k", "threads"):
            if getattr(self, name) is not None:
                self._check_int(name, 1)
        if self.k is not None and self.k > len(doms) * self.clients_per_domain:
            raise _err("k", self.k, f"exceeds the {len(doms) * self.clients_per_domain} clients")
        sizes = dict(DEFAULT_SAMPLES_PER_CLIENT)
        if self.dataset is None:  # a registered domain brings its own default client size
            from fl_oracle.sim.data.domains import domain_spec

            for d in doms:
                if d not in sizes:
                    try:
                        sizes[d] = domain_spec(d).samples_per_client
                    except ValueError:
                        pass
        spc = self.samples_per_client
        if isinstance(spc, int) and not isinstance(spc, bool):
            # one number for every domain, as the command line's --samples-per-client 20
            set_(self, "samples_per_client", dict.fromkeys(doms, spc))
        if self.samples_per_client is not None:
            if not isinstance(self.samples_per_client, Mapping):
                raise _err(
                    "samples_per_client",
                    self.samples_per_client,
                    "must be one int for every domain or map domain -> int",
                )
            extra = sorted(set(self.samples_per_client) - set(doms))
            if extra:
                raise _err(
                    "samples_per_client",
                    dict(self.samples_per_client),
                    f"names {extra[0]!r}, not one of the domains {', '.join(doms)}",
                )
            sizes.update(self.samples_per_client)
        for d in doms:
            n = sizes.get(d)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise _err(
                    "samples_per_client",
                    self.samples_per_client,
                    f"domain {d!r} needs a sample count >= 1, got {n!r}",
                )
        set_(self, "samples_per_client", {d: int(sizes[d]) for d in doms})
        self._check_pos("lr")
        self._check_pos("local_epochs")
        if self.local_epochs > MAX_LOCAL_EPOCHS:
            raise _err("local_epochs", self.local_epochs, f"must be at most {MAX_LOCAL_EPOCHS:,}")
        if self.threads is not None and self.threads > MAX_THREADS:
            raise _err("threads", self.threads, f"must be at most {MAX_THREADS:,}")
        self._check_nonneg("mu")
        self._check_nonneg("gamma")
        if self.dirichlet_alpha is not None:
            self._check_pos("dirichlet_alpha")
        self._check_nonneg("size_sigma")
        if self.size_sigma > 3:
            raise _err("size_sigma", self.size_sigma, "must be at most 3 (a log-normal spread)")
        budgets = dict(self.epoch_budgets or {})
        for key, b in budgets.items():
            if not self._is_client(key) and key not in doms:
                raise _err("epoch_budgets", key, "is neither a client id nor a domain")
            if (
                isinstance(b, bool)
                or not isinstance(b, int | float)
                or not (b > 0 and math.isfinite(b))
            ):
                raise _err("epoch_budgets", {key: b}, "budgets must be finite epochs > 0")
            if b > MAX_LOCAL_EPOCHS:
                raise _err("epoch_budgets", {key: b}, f"budgets are at most {MAX_LOCAL_EPOCHS:,}")
        set_(self, "epoch_budgets", {k: float(v) for k, v in budgets.items()} or None)
        for name, allowed in (
            ("data_mode", _DATA_MODES),
            ("device", _DEVICES),
            ("aggregation", _AGGREGATIONS),
            ("fisher_method", FISHER_METHODS),
        ):
            if getattr(self, name) not in allowed:
                raise _err(name, getattr(self, name), f"must be one of {', '.join(allowed)}")
        if not isinstance(self.model, str) or not (
            self.model in MODELS or self.model in GENERIC_MODELS or ":" in self.model
        ):
            raise _err(
                "model",
                self.model,
                f"must be one of {', '.join((*MODELS, *GENERIC_MODELS))} or module:factory",
            )
        self._check_int("resolution", 4)
        if not (
            isinstance(self.test_fraction, int | float)
            and not isinstance(self.test_fraction, bool)
            and 0.0 < self.test_fraction < 1.0
        ):
            raise _err("test_fraction", self.test_fraction, "must lie in (0, 1)")
        set_(self, "test_fraction", float(self.test_fraction))
        for name in ("dataset", "split_file"):
            v = getattr(self, name)
            if v is not None:
                if not isinstance(v, str | PurePath) or not str(v):
                    raise _err(name, v, "must be a path")
                set_(self, name, str(v))
        if self.split_file is not None and self.dataset is None:
            raise _err("split_file", self.split_file, "needs a dataset")
        if self.resolution > MAX_RESOLUTION:
            raise _err(
                "resolution", self.resolution, f"must be at most {MAX_RESOLUTION} (pixels a side)"
            )
        if self.dataset is not None and self.data_root is not None:
            raise _err("data_root", self.data_root, "and a dataset name two sources; give one")
        if self.dataset is not None and self.data_mode != "auto":
            raise _err(
                "data_mode", self.data_mode, "applies to the Digits-4 default, not to a dataset"
            )
        if not isinstance(self.adaptive_mu, bool):
            raise _err("adaptive_mu", self.adaptive_mu, "must be true or false")
        if self.data_root is not None and not isinstance(self.data_root, str):
            set_(self, "data_root", str(self.data_root))
        for name in ("lr", "local_epochs", "mu", "gamma"):
            set_(self, name, float(getattr(self, name)))

    def _is_client(self, key: str) -> bool:
        """Whether ``key`` names a client of this federation (``<domain>-<i>``)."""
        dom, _, i = str(key).rpartition("-")
        ok = i.isdigit() and str(int(i)) == i  # "mnist-01" is not the id "mnist-1"
        return dom in self.domains and ok and int(i) < self.clients_per_domain

    def client_sizes(self) -> dict[str, tuple[int, ...]]:
        """Every client's training-set size, by domain (``size_sigma``; arithmetic on the
        settings, before any data is loaded)."""
        out = {}
        for j, d in enumerate(self.domains):
            n = self.samples_per_client[d]
            if self.size_sigma == 0:
                out[d] = (n,) * self.clients_per_domain
                continue
            rng = np.random.default_rng([self.data_seed, 0x51CE, j])
            z = rng.standard_normal(self.clients_per_domain)
            s = self.size_sigma
            out[d] = tuple(max(1, round(n * v)) for v in np.exp(s * z - s * s / 2).tolist())
        return out

    def train_needed(self) -> dict[str, int]:
        """Training images each domain must hold: its clients' sizes, their local hold-outs
        and the validation set."""
        sizes = self.client_sizes()
        return {
            d: sum(sizes[d]) + self.clients_per_domain * self.local_holdout + self.val_per_domain
            for d in self.domains
        }

    def federation_bytes(self) -> int:
        """Bytes the federation's images take once loaded (a dataset's float32 at
        ``resolution`` a side; the Digits-4 default's uint8 pixels at 32, kept compact and
        decoded per client, :mod:`fl_oracle.sim.store`; 3 channels): training shards, local
        hold-outs, validation and test sets. Arithmetic on the settings, before any load."""
        side = self.resolution if self.dataset is not None else 32
        per_image = 3 * side * side * (4 if self.dataset is not None else 1)
        n = sum(self.train_needed().values())
        n += len(self.domains) * (self.test_per_domain or 0)
        return int(n * per_image)

    def _check_int(self, name: str, lo: int) -> None:
        v = getattr(self, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise _err(name, v, f"must be an integer >= {lo}")

    def _check_pos(self, name: str) -> None:
        v = getattr(self, name)
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not (v > 0 and math.isfinite(v))
        ):
            raise _err(name, v, "must be a finite number > 0")

    def _check_nonneg(self, name: str) -> None:
        v = getattr(self, name)
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not (v >= 0 and math.isfinite(v))
        ):
            raise _err(name, v, "must be a finite number >= 0")

    # ------------------------------------------------------------------ derived values
    @property
    def n_clients(self) -> int:
        """N, the federation's clients: clients per domain x domains (arithmetic)."""
        return self.clients_per_domain * len(self.domains)

    @property
    def client_ids(self) -> tuple[str, ...]:
        """Client ids ``<domain>-<i>`` in federation order (domain-major)."""
        return tuple(f"{d}-{i}" for d in self.domains for i in range(self.clients_per_domain))

    def budget(self, client_id: str) -> float:
        """Local epoch budget of one client (client id beats domain beats ``local_epochs``)."""
        b = self.epoch_budgets or {}
        if client_id in b:
            return b[client_id]
        return b.get(client_id.rsplit("-", 1)[0], self.local_epochs)

    @classmethod
    def for_dataset(cls, dataset: str | PurePath, **fields_: Any) -> OracleConfig:
        """A configuration for an image-folder dataset, its domains and sizes filled in
        (:func:`dataset_fields`)."""
        return cls(**dataset_fields(dataset, **fields_))

    def replace(self, **changes: Any) -> OracleConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ TOML
    def to_toml(self) -> str:
        """The configuration as TOML text (``None`` fields listed under ``unset``)."""
        lines: list[str] = []
        tables: list[str] = []
        unset: list[str] = []
        for f in fields(self):
            if f.name.startswith("_"):
                continue
            v = getattr(self, f.name)
            if v is None:
                unset.append(f.name)
            elif isinstance(v, Mapping):
                body = "\n".join(f"{_key(k)} = {_value(x)}" for k, x in v.items())
                tables.append(f"[{f.name}]\n{body}\n")
            else:
                lines.append(f"{f.name} = {_value(v)}")
        lines.append(f"unset = {_value(tuple(unset))}")
        return "\n".join(lines) + "\n\n" + "\n".join(tables)

    @classmethod
    def from_toml(cls, text: str) -> OracleConfig:
        """Parse TOML written by :meth:`to_toml` (or by hand) into a validated config."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config TOML is malformed: {exc}") from exc
        unset = raw.pop("unset", [])
        for table in RECORD_TABLES:  # what the run recorded beside its configuration
            raw.pop(table, None)
        names = {f.name for f in fields(cls) if not f.name.startswith("_")}
        unknown = sorted(set(raw) - names)
        if unknown:
            from selection.errors import did_you_mean

            hint = did_you_mean(unknown[0], sorted(names))
            raise ConfigError(f"config TOML has unknown field(s): {', '.join(unknown)}{hint}")
        if not isinstance(unset, list) or any(not isinstance(u, str) for u in unset):
            raise ConfigError(f"config TOML: unset = {unset!r} must be a list of field names")
        if "domains" in raw and (
            isinstance(raw["domains"], str) or not isinstance(raw["domains"], list)
        ):
            raise ConfigError(f"config field domains={raw['domains']!r}: must be a list of names")
        for name in unset:
            if name not in names:
                raise ConfigError(f"config TOML unsets unknown field {name!r}")
            raw[name] = None
        if "domains" in raw:
            raw["domains"] = tuple(raw["domains"])
        try:
            return cls(**raw)
        except TypeError as exc:  # a value of the wrong kind that the checks did not name
            raise ConfigError(f"config TOML: {exc}") from None


def _key(k: str) -> str:
    return toml_key(k)


def _value(v: Any) -> str:
    try:
        return toml_value(v, strict=True)
    except TypeError:
        raise ConfigError(f"cannot write {v!r} to TOML") from None


def small_config(**changes: Any) -> OracleConfig:
    """The smallest federation the docstring examples train: domains ``svhn`` and ``syn``, 2
    clients each of 8 generated images, 10 validation and 10 test images a domain, no local
    hold-out, ``cnn-small`` on one CPU thread; ``changes`` override any field.

    Examples:
        >>> from fl_oracle.sim.config import small_config
        >>> config = small_config()
        >>> config.domains, config.n_clients, config.train_needed()["syn"]
        (('svhn', 'syn'), 4, 26)
    """
    settings = dict(domains=("svhn", "syn"), clients_per_domain=2, samples_per_client=8,
                    val_per_domain=10, test_per_domain=10, local_holdout=0, model="cnn-small",
                    data_mode="generated", device="cpu", threads=1)  # fmt: skip
    return OracleConfig(**{**settings, **changes})


def dataset_fields(dataset: str | PurePath, **fields_: Any) -> dict[str, Any]:
    """:class:`OracleConfig` fields for an image-folder dataset, its domains and sizes filled in.

    Scans ``dataset`` (no image is decoded). Fields given are kept; unless given, ``domains``
    are the dataset's; ``val_per_domain`` is min(500, 15% of the smallest domain's training
    split); ``samples_per_client`` splits what each domain has left equally among its clients,
    keeping up to ``local_holdout`` (at most a fifth of a client's share) per client for the
    local hold-out.

    Examples:
        Two domains with 10 training and 2 test images of each of two classes: 20 training
        images a domain, 3 of them (15%) for validation, 17 // 2 = 8 for each of 2 clients,
        of which 1 (a fifth, below ``local_holdout=2``) is its hold-out:

        >>> import tempfile
        >>> from pathlib import Path
        >>> from PIL import Image
        >>> from fl_oracle.sim.config import dataset_fields
        >>> with tempfile.TemporaryDirectory() as root:
        ...     for domain in ("photo", "sketch"):
        ...         for split, n in (("train", 10), ("test", 2)):
        ...             for label in ("cat", "dog"):
        ...                 folder = Path(root, domain, split, label)
        ...                 folder.mkdir(parents=True)
        ...                 for i in range(n):
        ...                     Image.new("RGB", (8, 8)).save(folder / f"{i}.png")
        ...     fields_ = dataset_fields(root, clients_per_domain=2, local_holdout=2)
        >>> fields_["domains"], fields_["val_per_domain"], fields_["samples_per_client"]
        (['photo', 'sketch'], 3, {'photo': 7, 'sketch': 7})
    """
    from fl_oracle.sim.data.folders import scan_dataset

    index = scan_dataset(
        dataset,
        split_file=fields_.get("split_file"),
        test_fraction=fields_.get("test_fraction", 0.2),
        seed=fields_.get("data_seed", 0),
    )
    out = dict(fields_)
    domains = tuple(out.pop("domains", None) or index.domains)
    missing = [d for d in domains if d not in index.domains]
    if missing:
        raise _err("domains", list(domains), f"dataset {dataset} has no domain {missing[0]!r}")
    cpd = int(out.get("clients_per_domain", 5))
    n_train = {d: index.count(d, "train") for d in domains}
    val = out.pop("val_per_domain", None)
    if val is None:
        val = max(1, min(500, int(0.15 * min(n_train.values()))))
    hold = int(out.get("local_holdout", 100))
    sizes = out.pop("samples_per_client", None)
    if sizes is None:  # 0 is a size given (and refused below), not "the dataset's share"
        sizes = {}
    sizes = {d: sizes for d in domains} if isinstance(sizes, int) else dict(sizes)
    extra = sorted(set(sizes) - set(domains))
    if extra:
        raise _err(
            "samples_per_client",
            sizes,
            f"names {extra[0]!r}, not one of the domains {', '.join(domains)}",
        )
    for d in domains:
        if d not in sizes:
            share = (n_train[d] - int(val)) // max(1, cpd)
            if share < 1:
                raise ConfigError(
                    f"dataset {dataset}: domain {d!r} has {n_train[d]} training images, too few "
                    f"for {val} validation images and {cpd} clients; lower val_per_domain "
                    "(--val-per-domain) or clients_per_domain"
                )
            sizes[d] = max(1, share - min(hold, share // 5))
    out.update(
        dataset=str(dataset),
        domains=list(domains),
        val_per_domain=int(val),
        samples_per_client={d: sizes[d] for d in domains},  # checked by OracleConfig
    )
    _check_fits(out, n_train)
    return out


def _check_fits(fields_: dict[str, Any], n_train: dict[str, int]) -> None:
    """Refuse, from the folder's image counts, what the load would refuse after sharing a
    domain's images among its clients (:func:`fl_oracle.sim.partition.share_split`): a
    domain that cannot give its validation set and every client its (shared) size. So a
    study's or grid's every cell is checked against the folder before any run trains.
    Settings the configuration itself refuses are left to it (reported where it is built)."""
    from fl_oracle.sim.partition import share_split

    try:
        config = OracleConfig(seed=0, **fields_)
    except (ConfigError, TypeError, ValueError):
        return
    config, _ = share_split(config, n_train)
    sizes = config.client_sizes()
    for d in config.domains:
        need = sum(sizes[d]) + config.val_per_domain
        if need > n_train[d]:
            raise ConfigError(
                f"dataset {fields_['dataset']}: domain {d!r} has {n_train[d]} training images, "
                f"too few for {config.val_per_domain} validation images and "
                f"{config.clients_per_domain} clients of at least one image each; lower "
                "val_per_domain (--val-per-domain) or clients_per_domain"
            )
