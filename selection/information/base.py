"""The information-model interface and its registry.

An information model answers, for one round t of live training:

* **who trains before the selection** (:meth:`InformationModel.trains_before`): every client
  (``fresh``), a pool drawn as FedAvg draws (``pool:P``), or nobody (``stale``, ``probe``,
  ``predicted``: only the K committed clients train, after the choice, as in FedAvg);
* **whether every client runs the probe pass** (``probes``): a forward and backward pass at
  w_t on a small probe batch, no training (loss, Fisher trace F, first-order utilities);
* **what the selector sees** (:meth:`InformationModel.view`): a round-stats table (the
  contract of :mod:`selection.schema`) with ``measured_round``, the round each row's values
  were measured at, and ``predicted`` (True where U, U_<domain> are estimates);
* **what it keeps** (:meth:`InformationModel.observe`): the true statistics of the clients
  that trained this round, measured from the updates they returned (no extra training).

The deployment cost a driver charges follows from these declarations
(:mod:`fl_oracle.experiments.cost`). Models are stateful (they remember past rounds): build a
new one per run with :func:`make_information`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from selection.errors import SelectionError

__all__ = [
    "Information",
    "InformationModel",
    "RoundInputs",
    "register",
    "information_models",
    "get_information",
    "parse_information",
    "driver_information",
    "make_information",
    "default_information",
]

_REGISTRY: dict[str, type[InformationModel]] = {}


@dataclass(frozen=True)
class RoundInputs:
    """What a driver hands an information model at round t, before the selection.

    Attributes:
        t: the round (global model w_t).
        k: clients to commit.
        clients: ``client_id, domain, n_samples`` of every client, federation order.
        domains: the D domains, report order.
        measured: round-stats rows (every contract column) of the clients that trained at w_t
            before the selection (:meth:`InformationModel.trains_before`); None when none did.
        probe: the probe pass of every client at w_t, None without one: ``client_id, loss, F,
            B, cos_g, steps`` and ``x_<domain>`` per domain, the first-order decrease of that
            domain's validation loss a client's update would bring (nats:
            lr · steps · <grad L_i(w_t), grad L_d(w_t)>, grad L_d on the server's validation
            samples of d).
        base_acc: validation accuracy (%) of w_t itself per domain (the server's own pass).
        val_sizes: validation samples per domain (the pooled U weighs the domains by these).

    Examples:
        >>> import pandas as pd
        >>> clients = pd.DataFrame({"client_id": ["a", "b", "c"], "domain": ["x", "x", "y"],
        ...     "n_samples": [10, 30, 20]})
        >>> from selection.information.base import RoundInputs, make_information
        >>> measured = clients.assign(round=3, U=[60.0, 70.0, 80.0])  # every client trained
        >>> inputs = RoundInputs(t=3, k=2, clients=clients, domains=("x", "y"), measured=measured)
        >>> view = make_information("fresh").view(inputs)  # what the selector sees at round 3
        >>> view[["client_id", "U", "measured_round", "predicted"]].values.tolist()
        [['a', 60.0, 3, False], ['b', 70.0, 3, False], ['c', 80.0, 3, False]]
    """

    t: int
    k: int
    clients: pd.DataFrame
    domains: tuple[str, ...]
    measured: pd.DataFrame | None = None
    probe: pd.DataFrame | None = None
    base_acc: Mapping[str, float] | None = None
    val_sizes: Mapping[str, int] | None = None


class InformationModel(ABC):
    """What every client does per round and what the selector then sees.

    Class attributes:
        name: the modifier's name (``pool``).
        summary: one line for ``fedsel methods``.
        arg: the argument's name (``P``) or None.
        arg_example: a value shown in errors and help.
        upper_bound: the model needs what a deployment cannot afford (``fresh``): labelled as
            the oracle's upper bound wherever it appears.
        probes: every client runs the probe pass at w_t every round.
        reads_probe: the view reads that probe pass (``RoundInputs.probe``, ``base_acc``,
            ``val_sizes``): a driver runs it before the choice and hands it over.
        logits: the view's clients have validation logits (the ``ensemble`` surrogate's
            input): ``fresh`` and ``pool`` (the clients that trained this round), ``stale``
            (the logits of the round each row was measured at).
        remembers: the view shows remembered rows (``stale``): a driver keeps each client's
            logits from the round it last trained.
        order: position in listings.
        chooses_among_trained: the view shows only the clients that trained before the
            choice (``pool:P``), so their training is the round's commit.
        server_evaluates: whose update the server evaluates on its own ("" for none): a model
            that reads one client's update is impossible under secure aggregation, where the
            server sees only their sum (the privacy mode refuses it with this reason).
        rule_reads: the selector's own reads decide what is measured (``rule``, a baseline
            rule whose spec names no model: :class:`~selection.information.rule.Rule`): a
            driver measures them with its rule view (``rule_view``) and charges the run for
            what the rule reads.
        nameable: a spec or ``--information`` may name the model; ``rule`` is the drivers'
            alone (listings, errors and the spec grammar show only nameable models).

    Examples:
        >>> import pandas as pd
        >>> clients = pd.DataFrame({"client_id": ["a", "b", "c"], "domain": ["x", "x", "y"],
        ...     "n_samples": [10, 30, 20]})
        >>> from selection.information.base import RoundInputs, make_information
        >>> stale = make_information("stale")  # each client's last report, and its age
        >>> stale.trains_before(0, clients, k=2)  # round 0: nobody has reported yet
        ['a', 'b', 'c']
        >>> stale.observe(0, clients.assign(round=0, U=[60.0, 70.0, 80.0]))
        >>> stale.observe(1, clients[clients["client_id"] == "b"].assign(round=1, U=75.0))
        >>> stale.trains_before(2, clients, k=2) is None  # only the K committed train now
        True
        >>> view = stale.view(RoundInputs(t=2, k=2, clients=clients, domains=("x", "y")))
        >>> view[["client_id", "U", "age"]].values.tolist()
        [['a', 60.0, 2], ['b', 75.0, 1], ['c', 80.0, 2]]
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    arg: ClassVar[str | None] = None
    arg_example: ClassVar[str] = ""
    upper_bound: ClassVar[bool] = False
    probes: ClassVar[bool] = False
    reads_probe: ClassVar[bool] = False
    logits: ClassVar[bool] = False
    #: the view shows remembered rows, so its logits are each row's from its own round
    remembers: ClassVar[bool] = False
    order: ClassVar[int] = 100
    chooses_among_trained: ClassVar[bool] = False
    server_evaluates: ClassVar[str] = ""
    rule_reads: ClassVar[bool] = False
    nameable: ClassVar[bool] = True

    def __init__(self, value: int | None = None, *, seed: int = 0) -> None:
        self.value = value
        self.seed = int(seed)
        #: the last measured row of every client ever measured (client_id -> row)
        self.memory: dict[str, dict] = {}

    @property
    def spec(self) -> str:
        """The canonical modifier (``pool:10``)."""
        return self.name if self.value is None else f"{self.name}:{self.value}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"

    @classmethod
    def spec_form(cls) -> str:
        return f"{cls.name}:{cls.arg}" if cls.arg else cls.name

    @classmethod
    def check_value(cls, value: int | None) -> None:
        """Refuse a bad argument (SelectionError)."""
        if cls.arg is None and value is not None:
            raise SelectionError(f"information model {cls.name} takes no argument")
        if cls.arg is not None and value is None:
            raise SelectionError(
                f"information model {cls.name} needs {cls.arg}, e.g. {cls.name}:{cls.arg_example}"
            )

    def check_k(self, n: int, k: int) -> None:  # noqa: B027 - most models serve any K
        """Refuse a federation this model cannot serve (SelectionError)."""

    def probed(
        self, ids: Sequence[str], before: Sequence[str] | None, picks: Sequence[str]
    ) -> list[str]:
        """Ids of the clients that ran the probe pass this round (a deployment pays it):
        every client where ``probes``; else those whose rows report F and loss, measured
        at w_t (the clients that trained)."""
        if self.probes:
            return list(ids)
        return list(dict.fromkeys([*(before or ()), *picks]))

    def down_messages(self, n_probed: int, n_trained: int, n_domains: int) -> int:
        """Model-sized messages sent down in a round: w_t to every client that probes or
        trains (``n_probed`` counts the clients that probe, ``n_trained`` those that train
        and did not probe)."""
        return int(n_probed) + int(n_trained)

    def probe_floats(self, n_classes: int, n_domains: int) -> int:
        """Numbers a probed client uploads: loss, F and its label histogram."""
        return 2 + int(n_classes)

    def trains_before(self, t: int, clients: pd.DataFrame, k: int) -> list[str] | None:
        """Ids of the clients that train at w_t before the selection (None: nobody)."""
        return None

    def quality(self) -> dict[str, float]:
        """What the last view's quality was, as history columns ({} for a model that does not
        measure it; ``noisy:R`` writes the achieved rank correlation and error)."""
        return {}

    @abstractmethod
    def view(self, inputs: RoundInputs) -> pd.DataFrame:
        """The table the selector sees at round ``inputs.t`` (contract columns plus
        ``measured_round`` and ``predicted``)."""

    def observe(self, t: int, trained: pd.DataFrame, inputs: RoundInputs | None = None) -> None:
        """Keep the true statistics of the clients that trained at round t.

        Args:
            t: the round.
            trained: their round-stats rows (measured from their returned updates).
            inputs: the round's inputs (the probe pass, the base accuracies).
        """
        for row in trained.to_dict("records"):
            self.memory[str(row["client_id"])] = {**row, "measured_round": int(t)}


def register(cls: type[InformationModel]) -> type[InformationModel]:
    """Class decorator: make ``cls`` a spec modifier under ``cls.name``.

    Examples:
        >>> import pandas as pd
        >>> clients = pd.DataFrame({"client_id": ["a", "b", "c"], "domain": ["x", "x", "y"],
        ...     "n_samples": [10, 30, 20]})
        >>> from selection.information.base import InformationModel, make_information, register
        >>> @register
        ... class Largest(InformationModel):
        ...     name = "largest"
        ...     summary = "the K largest clients train before the choice"
        ...     def trains_before(self, t, clients, k):
        ...         return clients.nlargest(k, "n_samples")["client_id"].tolist()
        ...     def view(self, inputs):
        ...         return inputs.measured.assign(measured_round=inputs.t, predicted=False)
        >>> model = make_information("largest")  # a spec modifier now: eps:5@largest
        >>> model, model.trains_before(0, clients, k=2)
        (Largest('largest'), ['b', 'c'])
        >>> from selection.information.base import _REGISTRY
        >>> del _REGISTRY["largest"]  # unregister: the example leaves the registry as it was
    """
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    from selection.plugins import guard_builtin

    guard_builtin(_REGISTRY, cls.name, cls, "information model")
    _REGISTRY[cls.name] = cls
    return cls


def information_models() -> dict[str, type[InformationModel]]:
    """Every registered information model a spec may name, in listing order (installed
    plugins' included; the drivers' ``rule`` is not one).

    Examples:
        >>> from selection.information.base import information_models
        >>> models = information_models()
        >>> list(models)[:4]
        ['fresh', 'noisy', 'stale', 'probe']
        >>> [name for name, cls in models.items() if cls.upper_bound], models["pool"].spec_form()
        (['fresh', 'noisy'], 'pool:P')
    """
    import selection.information  # noqa: F401 - discovery registers the modules
    from selection.plugins import plugin_classes

    for cls in plugin_classes("fedsel.information", InformationModel):
        _REGISTRY.setdefault(cls.name, cls)

    return dict(
        sorted(
            ((name, cls) for name, cls in _REGISTRY.items() if cls.nameable),
            key=lambda kv: (kv[1].order, kv[0]),
        )
    )


def get_information(name: str) -> type[InformationModel]:
    try:
        return information_models()[name]
    except KeyError:
        raise SelectionError(
            f"unknown information model {name!r} (one of {', '.join(information_models())})"
        ) from None


def _split(text: str) -> tuple[type[InformationModel], int | None]:
    name, colon, arg = str(text).strip().partition(":")
    cls = get_information(name.strip())
    value = None
    if colon:
        try:
            v = float(arg)
        except ValueError:
            raise SelectionError(f"information model {text!r}: {arg!r} is not a number") from None
        if not np.isfinite(v) or v != int(v) or v < 1:
            raise SelectionError(f"information model {text!r}: {arg!r} must be an integer >= 1")
        value = int(v)
    cls.check_value(value)
    return cls, value


class Information(str):
    """An information model as a spec or ``--information`` names it, parsed once: its canonical
    spelling (a ``str``, so history columns, TOML and comparisons read it as text) carrying
    the registered class and its argument. Parsing a parsed one returns it unchanged, so a spec
    parsed by a study is not parsed again by the loop, the strategy or the cost table.

    Examples:
        >>> from selection.information import Information
        >>> info = Information("pool:10.0")
        >>> info, info.model.__name__, info.arg, Information(info) is info
        ('pool:10', 'Pool', 10, True)
        >>> info.model.upper_bound, Information("fresh").model.upper_bound
        (False, True)
        >>> info.make(seed=0).trains_before  # a new model for one run
        <bound method Pool.trains_before of Pool('pool:10')>
    """

    model: type[InformationModel]
    arg: int | None

    def __new__(cls, text: str) -> Information:
        if isinstance(text, Information):
            return text
        model, value = _split(text)
        out = super().__new__(cls, model.name if value is None else f"{model.name}:{value}")
        out.model, out.arg = model, value
        return out

    def make(self, *, seed: int = 0) -> InformationModel:
        """A new (stateful) model of this kind for one run."""
        return self.model(self.arg, seed=seed)

    def __reduce__(self):
        # to a worker process as parsed: the class by its registered name, no second parse
        return _restore_information, (str(self), self.model.name, self.arg)


def _restore_information(text: str, name: str, arg: int | None) -> Information:
    cls = _REGISTRY.get(name)
    return _information_of(get_information(name) if cls is None else cls, arg, text)


def _information_of(cls: type[InformationModel], arg: int | None, text: str = "") -> Information:
    """The parsed :class:`Information` of a registered class (no name looked up)."""
    out = str.__new__(Information, text or (cls.name if arg is None else f"{cls.name}:{arg}"))
    out.model, out.arg = cls, arg
    return out


def parse_information(text: str) -> str:
    """The canonical spelling of an information model (``pool:10.0`` -> ``pool:10``);
    SelectionError on an unknown name or a bad argument.

    Examples:
        >>> from selection.information.base import parse_information
        >>> parse_information("pool:10.0"), parse_information(" stale ")
        ('pool:10', 'stale')
        >>> parse_information("pool")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: information model pool needs P, e.g. pool:10
    """
    return Information(text)


def make_information(text: str, *, seed: int = 0) -> InformationModel:
    """A new (stateful) model for one run.

    Examples:
        >>> import pandas as pd
        >>> clients = pd.DataFrame({"client_id": ["a", "b", "c"], "domain": ["x", "x", "y"],
        ...     "n_samples": [10, 30, 20]})
        >>> from selection.information.base import make_information
        >>> pool = make_information("pool:2", seed=0)  # 2 candidates drawn by size train first
        >>> pool, pool.value, pool.spec
        (Pool('pool:2'), 2, 'pool:2')
        >>> pool.trains_before(0, clients, k=2), pool.trains_before(1, clients, k=2)
        (['b', 'c'], ['a', 'b'])
        >>> make_information("stale").memory  # a new model remembers nothing yet
        {}
    """
    return Information(text).make(seed=seed)


def driver_information(text: str) -> Information:
    """A run's information model as a driver names it: one a spec may name
    (:func:`parse_information`) or one of the drivers' own (``rule``).

    Examples:
        >>> from selection.information import driver_information
        >>> driver_information("pool:3.0"), driver_information("rule").model.__name__
        ('pool:3', 'Rule')
    """
    if isinstance(text, Information):
        return text
    cls = _REGISTRY.get(str(text).strip())
    if cls is not None and not cls.nameable:
        return _information_of(cls, None)
    return Information(text)


def default_information() -> str:
    """The model of a spec without one: ``fresh`` (the oracle's upper bound).

    Examples:
        >>> from selection.information.base import default_information, information_models
        >>> name = default_information()
        >>> name, information_models()[name].upper_bound
        ('fresh', True)
    """
    return "fresh"


def latest(memory: Mapping[str, dict], ids: Sequence[str]) -> pd.DataFrame:
    """The remembered rows of ``ids`` (each client's last measurement), in that order.

    Examples:
        >>> from selection.information.base import latest
        >>> memory = {"a": {"client_id": "a", "U": 60.0, "measured_round": 0},
        ...           "b": {"client_id": "b", "U": 75.0, "measured_round": 1}}
        >>> latest(memory, ["b", "a"]).values.tolist()
        [['b', 75.0, 1], ['a', 60.0, 0]]
    """
    return pd.DataFrame([memory[c] for c in ids])
