"""Selector specs as typed objects: ``name[:arg][@modifier+modifier...]`` parsed once.

A spec string exists only at the edge (a command line, a study's TOML); :func:`parse_spec` turns
it into a frozen :class:`Spec` (name, argument, information model, surrogate, verified picks,
aggregation)
that the selectors, the training drivers, the studies and their reports read. The grammar and
what each name means: :mod:`selection.selectors`. :func:`spec_forms`, :func:`selector_help` and
:func:`split_specs` serve the command lines.

Why one module past 450 lines: the grammar, the canonical form and every check a parse makes
(defaults folded, surrogate structures, information models, did-you-mean) are one contract;
split, a check would live apart from the grammar it guards.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from selection.defaults import DEFAULT_SURROGATE
from selection.errors import SelectionError, unknown_name
from selection.verify import DEFAULT_VERIFY

if TYPE_CHECKING:
    from selection.aggregation import Aggregation, AggregationChoice
    from selection.information import Information
    from selection.surrogates import SurrogateSpec

__all__ = [
    "ALIASES",
    "Spec",
    "parse_spec",
    "bad_spec",
    "spec_number",
    "spec_forms",
    "selector_help",
    "modifier_help",
    "split_specs",
]


#: spec names that are another formulation with one keyword set from the argument:
#: ``composite:1,0`` is ``weighted`` with ``composite="1,0"``
ALIASES: dict[str, tuple[str, str]] = {"composite": ("weighted", "composite")}


@dataclass(frozen=True)
class Spec:
    """A selector spec taken apart: ``name[:arg][@modifier+modifier...]``.

    Attributes:
        name: selector (formulation or baseline) name.
        arg: the text after ``:`` (None without one).
        stats_mode: the information model as parsed
            (:class:`selection.information.Information`: canonical text, e.g. ``pool:10``,
            carrying the registered model class and its argument); None when the spec names
            none (:func:`information_of`).
        surrogate: the surrogate of U(S), U_d(S) as parsed
            (:class:`selection.surrogates.SurrogateSpec`: its name carrying the registered
            surrogate object; default ``mean``).
        verify: verified picks: candidates measured per round (0 = off).
        aggregation: how the picks are weighted in the aggregate (``agg=samples|uniform|
            domain``, :mod:`selection.aggregation`), or ``best``: chosen every round with S by
            the formulation's objective (:mod:`selection.aggregation_choice`); None: the
            selector's own default (a formulation's sample weights, a baseline rule's
            authors' weights).

    Text given for either is parsed at construction (an unknown name is a SelectionError), so
    a spec holds objects: nothing downstream looks a name up again.

    Examples:
        >>> from selection.specs import Spec
        >>> spec = Spec("eps", "5.0", stats_mode="pool:10")
        >>> spec.canonical, spec.base, spec.information, spec.selector_spec
        ('eps:5@pool:10', 'eps:5', 'pool:10', 'eps:5')
        >>> Spec("random").information, Spec("random").is_rule  # a rule reads its own inputs
        ('rule', True)
        >>> spec.with_surrogate("weighted").canonical  # as --surrogate weighted sets it
        'eps:5@pool:10+weighted'
    """

    name: str
    arg: str | None = None
    stats_mode: Information | None = None
    surrogate: SurrogateSpec = DEFAULT_SURROGATE
    verify: int = 0
    aggregation: Aggregation | AggregationChoice | None = None

    def __post_init__(self) -> None:
        from selection.aggregation import parse_aggregation
        from selection.information import Information
        from selection.surrogates import SurrogateSpec

        if self.aggregation is not None:
            object.__setattr__(self, "aggregation", parse_aggregation(self.aggregation))

        # a frozen value: its parts parsed once, here (a parsed one is kept as it is)
        object.__setattr__(self, "surrogate", SurrogateSpec(self.surrogate))
        if self.stats_mode is not None:
            object.__setattr__(self, "stats_mode", Information(self.stats_mode))

    @property
    def base(self) -> str:
        """``name[:arg]`` without modifiers, numbers in one spelling (``5.0``, ``5``, ``5e0``
        -> ``5``)."""
        if self.arg is None:
            return self.name
        parts = [_canonical_number(t) for t in self.arg.split(",")]
        defaults = _arg_defaults(self.name)
        while (
            len(parts) > 1 and len(parts) <= len(defaults) and defaults[len(parts) - 1] is not None
        ):
            if parts[-1] != _canonical_number(defaults[len(parts) - 1]):
                break
            parts.pop()  # a trailing argument at its default: one spelling per selector
        return f"{self.name}:{','.join(parts)}"

    @property
    def modifiers(self) -> tuple[str, ...]:
        mods = []
        if self.stats_mode is not None and not (
            self.stats_mode == "fresh" and not _is_rule(self.name)
        ):
            mods.append(self.stats_mode)
        if self.surrogate != DEFAULT_SURROGATE:
            mods.append(self.surrogate)
        if self.verify:
            mods.append("verify" if self.verify == DEFAULT_VERIFY else f"verify={self.verify}")
        if self.aggregation is not None:
            mods.append(f"agg={self.aggregation}")
        return tuple(mods)

    @property
    def selector_spec(self) -> str:
        """The spec without the information model (what the selector itself reads)."""
        mods = [m for m in self.modifiers if m != self.stats_mode]
        return self.base + ("@" + "+".join(mods) if mods else "")

    @property
    def information(self) -> Information:
        """The information model a driver runs, parsed: the spec's, else ``fresh`` for a
        formulation and ``rule`` for a baseline rule (the registered
        :class:`~selection.information.Rule`: the simulator computes the probe pass, the run
        is charged for what the rule reads)."""
        if self.stats_mode is not None:
            return self.stats_mode
        from selection.information import RULE, Information, default_information

        return RULE if _is_rule(self.name) else Information(default_information())

    @property
    def canonical(self) -> str:
        """The one spelling of this spec: defaults dropped, modifiers in a fixed order."""
        return self.base + ("@" + "+".join(self.modifiers) if self.modifiers else "")

    def __getstate__(self) -> dict:
        # the fields only: the cached formulation is looked up again where the spec lands (a
        # class registered in a test or a notebook cannot travel to a worker by reference)
        return {k: v for k, v in self.__dict__.items() if k != "formulation"}

    @cached_property
    def formulation(self) -> type:
        """The registered class this spec names, looked up once: a formulation's
        :class:`~selection.solvers.base.Solver` subclass (``composite`` is ``weighted``'s) or a
        baseline rule's :class:`~selection.baselines.base.Baseline` subclass; SelectionError
        for a name neither registry holds.

        Examples:
            >>> from selection.specs import parse_spec
            >>> parse_spec("eps:5@probe").formulation.__name__
            'EpsSolver'
            >>> parse_spec("random").formulation.__name__, parse_spec("composite:1,0").formulation.name
            ('Uniform', 'weighted')
            >>> parse_spec("median:3").formulation
            Traceback (most recent call last):
            ...
            selection.errors.SelectionError: bad selector spec 'median:3': unknown selector 'median' (fedsel methods lists every selector)
            >>> parse_spec("maxmn:2").formulation
            Traceback (most recent call last):
            ...
            selection.errors.SelectionError: bad selector spec 'maxmn:2': unknown selector 'maxmn'; did you mean 'maxmin'? (fedsel methods lists every selector)
        """
        cls = _registered(self.name)
        if cls is not None:
            return cls
        from selection.baselines import baselines
        from selection.errors import did_you_mean
        from selection.solvers.registry import solvers

        hint = did_you_mean(self.name, [*solvers(), *ALIASES, *baselines()])
        raise SelectionError(
            f"bad selector spec {self.selector_spec!r}: unknown selector {self.name!r}{hint} "
            "(fedsel methods lists every selector)"
        )

    @property
    def is_rule(self) -> bool:
        """A registered baseline rule (``all`` included), which reads no surrogate."""
        return _is_rule(self.name)

    def with_surrogate(self, surrogate: str | None) -> Spec:
        """This spec judged by ``surrogate`` (None: unchanged), as ``--surrogate`` sets it;
        SelectionError if the surrogate is unknown or the spec names another one already."""
        if surrogate is None:
            return self
        from selection.surrogates import get_surrogate

        get_surrogate(surrogate)
        if self.surrogate not in (DEFAULT_SURROGATE, surrogate):
            raise bad_spec(
                self.canonical, f"it names the {self.surrogate} surrogate, --surrogate {surrogate}"
            )
        judged = replace(self, surrogate=surrogate)
        _check_information(judged.canonical, judged)  # e.g. probe supplies no logits
        return judged

    def run_information(
        self, stats: str | None = None, *, n: int | None = None, k: int | None = None
    ) -> str:
        """The information model a run of this spec reads, checked for every driver (``fedsel
        train``, ``study``, ``flower``, ``demo``) in this one place, by arithmetic on the
        settings, before any data is loaded or generated.

        Args:
            stats: a driver's ``--information`` (None: the spec's own model, else its default). It
                must name a registered model (:mod:`selection.information`; the drivers'
                internal ``rule`` is not one), agree with the spec's ``@MODEL`` and supply
                what the spec's surrogate and verified picks read, as the spec
                ``NAME@MODEL`` would.
            n: the federation's clients N (clients per domain x domains); None skips the
                federation checks.
            k: clients committed per round K (with ``n``: 1 <= K <= N and the model's own
                bounds, e.g. ``pool:P`` needs K <= P <= N).

        Returns:
            The canonical model (``pool:10``), or ``rule`` for a baseline rule without one.

        Raises:
            SelectionError: naming the spec, the model and the offending value.
        """
        from selection.information import parse_information

        spec = self
        if stats is not None:
            try:
                given = parse_information(stats)
            except SelectionError as exc:
                from selection.information import information_models

                name, models = str(stats).partition(":")[0].strip(), information_models()
                why = (
                    str(exc) if name in models else unknown_name("information model", name, models)
                )
                raise SelectionError(f"--information {stats!r}: {why}") from None
            if self.stats_mode is not None and self.stats_mode != given:
                raise SelectionError(
                    f"--information {given} contradicts the spec's @{self.stats_mode} "
                    f"({self.canonical}); give the model once"
                )
            spec = replace(self, stats_mode=given)
            _check_information(f"{self.canonical} with --information {given}", spec)
        info = spec.information
        if n is None or k is None:
            return info
        if k > n:
            raise SelectionError(f"k={k} exceeds the {n} clients of the federation")
        try:  # the model's own bounds (a rule's: none)
            info.make().check_k(int(n), int(k))
        except SelectionError as exc:
            raise SelectionError(f"selector {spec.canonical}: {exc}") from None
        return info


def _registered(name: str) -> type | None:
    """The class a spec name refers to (a formulation, ``composite``'s alias resolved, or a
    baseline rule), None for an unknown name: looked up without raising, as error messages
    print specs (:attr:`Spec.formulation` raises for the unknown one)."""
    from selection.baselines import baselines
    from selection.solvers.registry import solvers

    return solvers().get(ALIASES.get(name, (name, None))[0]) or baselines().get(name)


def _arg_defaults(name: str) -> tuple[str | None, ...]:
    """The registered class's argument defaults (``Solver.arg_defaults``), () where it has
    none or the name is unknown."""
    return tuple(getattr(_registered(name), "arg_defaults", ()) or ())


def _is_rule(name: str) -> bool:
    from selection.baselines import baselines

    return name in baselines()


def _canonical_number(text: str) -> str:
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        return t
    return format(v, ".15g") if np.isfinite(v) else t


def parse_spec(text: str) -> Spec:
    """Split a spec into name, argument and modifiers (SelectionError on a bad modifier).

    Examples:
        >>> from selection.specs import parse_spec
        >>> parse_spec("maxmin:2@weighted+pool:10+verify=4")
        Spec(name='maxmin', arg='2', stats_mode='pool:10', surrogate='weighted', verify=4, aggregation=None)
        >>> parse_spec("eps:5.0 @ pool:10.0").canonical
        'eps:5@pool:10'
        >>> parse_spec("eps-lt:5,10").canonical, parse_spec("eps-lt:5,20").canonical  # V's default
        ('eps-lt:5', 'eps-lt:5,20')
        >>> parse_spec("eps-lt:5@agg=domain+probe").canonical  # weights chosen: domain-balanced
        'eps-lt:5@probe+agg=domain'
        >>> parse_spec("eps-lt:5@agg=best+weighted+probe").canonical  # chosen with S each round
        'eps-lt:5@probe+weighted+agg=best'
        >>> parse_spec("eps:5@median")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: bad selector spec 'eps:5@median': unknown modifier ...
    """
    from selection.information import information_models, parse_information
    from selection.surrogates import surrogates

    if not isinstance(text, str) or not text.strip():
        raise bad_spec(str(text), "empty")
    text = text.strip()
    head, at, tail = text.partition("@")
    name, colon, arg = head.strip().partition(":")
    out = {"name": name.strip(), "arg": arg.strip() if colon else None}
    if colon and "_" in arg:  # float("0_1") is 1.0 in Python: refuse rather than misread
        raise bad_spec(text, f"{arg.strip()!r}: write numbers without '_'")
    seen: set[str] = set()
    infos = information_models()
    for mod in (m.strip() for m in tail.split("+")) if at else ():
        key, eq, val = mod.partition("=")
        kind = (
            "stats_mode"
            if key.partition(":")[0].strip() in infos
            else "surrogate"
            if key in surrogates()
            else "verify"
            if key == "verify"
            else "aggregation"
            if key == "agg"
            else None
        )
        if kind is None:
            from selection.errors import did_you_mean

            words = [*infos, *surrogates(), "verify", "agg"]
            hint = did_you_mean(key.partition(":")[0].strip(), words)
            if hint:
                raise SelectionError(
                    f"bad selector spec {text!r}: unknown modifier {mod!r}{hint} "
                    "(fedsel methods lists the information models and surrogates)"
                )
            said = f"unknown modifier {mod!r}" if mod else "an empty modifier after '@' or '+'"
            raise SelectionError(
                f"bad selector spec {text!r}: {said}: not an information model, surrogate, "
                "verify or agg= (see fedsel methods)"
            )
        if kind in seen:
            said = {"stats_mode": "information model"}.get(kind, kind)
            raise bad_spec(text, f"two {said} modifiers")
        seen.add(kind)
        if kind == "verify":
            m = DEFAULT_VERIFY if not eq else int(spec_number(text, val, integer=True))
            if m < 1:
                raise bad_spec(text, "verify=M needs M >= 1")
            out["verify"] = m
        elif kind == "aggregation":
            from selection.aggregation import parse_aggregation

            try:
                out[kind] = parse_aggregation(val)
            except SelectionError as exc:
                raise bad_spec(text, str(exc)) from None
        elif eq:
            raise bad_spec(text, f"modifier {key!r} takes no value")
        elif kind == "stats_mode":
            try:
                out[kind] = parse_information(key)
            except SelectionError as exc:
                raise bad_spec(text, str(exc)) from None
        else:
            out[kind] = key
    spec = Spec(**out)
    _check_information(text, spec)
    return spec


def _check_information(text: str, spec: Spec) -> None:
    """Refuse a surrogate the formulation does not take (``Solver.surrogate_structures``: the
    long-term ones need a linear or linear-fractional one), or whose inputs the information
    model does not supply."""
    _check_aggregation(text, spec)
    allowed = tuple(getattr(_registered(spec.name), "surrogate_structures", ()) or ())
    structure = str(spec.surrogate.model.structure)
    if allowed and structure not in allowed:
        raise SelectionError(
            f"bad selector spec {text!r}: {spec.name} needs a {' or '.join(allowed)} "
            f"surrogate; {spec.surrogate} is {structure}"
        )
    if spec.stats_mode is None:
        return
    info = spec.stats_mode.model  # both parsed with the spec
    if spec.verify and (not info.logits or info.remembers):
        raise bad_spec(
            text,
            f"verified picks evaluate the true aggregate of candidates trained at w_t, which "
            f"{spec.stats_mode} does not train ({_models_that(lambda m: m.logits and not m.remembers)} do)",
        )
    if spec.surrogate.model.needs_logits and not info.logits:
        raise bad_spec(
            text,
            f"the {spec.surrogate} surrogate needs the trained clients' validation logits, "
            f"which {spec.stats_mode} does not supply ({_models_that(lambda m: m.logits)} do)",
        )


def _check_aggregation(text: str, spec: Spec) -> None:
    """Refuse ``agg=best`` where nothing can choose the weights: a baseline rule, verified
    picks, a surrogate that models no aggregate (``mean``), a formulation that ranks no
    answers over the weights (:func:`selection.aggregation_choice.joint_form`)."""
    from selection.aggregation import FAMILY, AggregationChoice

    cls = _registered(spec.name)
    if spec.aggregation is not AggregationChoice.BEST or cls is None:
        return
    rules = ", ".join(FAMILY)
    if _is_rule(spec.name):
        raise SelectionError(
            f"bad selector spec {text!r}: agg=best chooses the weights by a formulation's "
            f"objective; {spec.name} is a baseline rule (it takes agg= one of {rules})"
        )
    if spec.verify:
        raise SelectionError(
            f"bad selector spec {text!r}: verify measures one weighting's candidates; with "
            f"verify give agg= one of {rules}, not best"
        )
    if spec.surrogate.model.aggregation is None:
        from selection.surrogates import surrogates

        able = [n for n, c in surrogates().items() if c.aggregation is not None]
        raise SelectionError(
            f"bad selector spec {text!r}: agg=best values each weighting by the surrogate's "
            f"U_d(S, w), and the {spec.surrogate} surrogate models no aggregate; use "
            f"{', '.join(able)}, e.g. {spec.base}@{able[0]}+agg=best"
        )
    from selection.aggregation_choice import joint_form, joint_formulations

    if joint_form(cls) is None:
        raise SelectionError(
            f"bad selector spec {text!r}: agg=best needs a formulation that ranks its answers "
            f"over the weights ({', '.join(joint_formulations())}); {spec.name} does not"
        )


def _models_that(has) -> str:
    """The registered information models with a capability, as a message lists them."""
    from selection.information import information_models

    names = [name for name, model in information_models().items() if has(model)]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def bad_spec(spec: str, why: str) -> SelectionError:
    """A refused spec in one short line: the offending part, the form of the selector it
    names (where it names a registered one) and where every form is listed.

    Examples:
        >>> from selection.specs import bad_spec
        >>> print(bad_spec("eps:abc", "'abc' is not a number"))
        bad selector spec 'eps:abc': 'abc' is not a number; its form: eps:E (see fedsel methods)
    """
    head, at, _ = str(spec).partition("@")
    name = head.partition(":")[0].strip()
    form = next((f for f in spec_forms() if f.partition(":")[0].partition("[")[0] == name), None)
    # the selector's form, where the fault is in its name:argument (not in a modifier, and
    # not already listing the choices)
    plain = not at and "one of" not in why and bool(form) and form not in why
    said = f"; its form: {form}" if plain and form and form != name else ""
    return SelectionError(f"bad selector spec {spec!r}: {why}{said} (see fedsel methods)")


def spec_number(spec: str, text: str, *, integer: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise bad_spec(spec, f"{text!r} is not a number") from None
    if not np.isfinite(v) or v < 0 or (integer and v != int(v)):
        raise bad_spec(spec, f"{text!r} must be a finite {'integer' if integer else 'number'} >= 0")
    return v


def spec_forms() -> tuple[str, ...]:
    """Every valid spec form: the registered solvers' ``spec_form`` plus the baselines.

    Examples:
        >>> from selection.specs import spec_forms
        >>> forms = spec_forms()
        >>> forms[:4], forms[-1]
        (('weighted:w_U,w_R,w_F,w_cos,w_B', 'eps:E', 'eps-rel:A', 'maxmin:D'), 'all')
        >>> "composite:alpha,beta,gamma" in forms, "power-of-choice:d" in forms
        (True, True)
    """
    from selection.baselines import baselines
    from selection.solvers.registry import solvers

    forms = [cls.spec_form or name for name, cls in solvers().items()]
    return (*forms, "composite:alpha,beta,gamma", *(b.spec_form() for b in baselines().values()))


def selector_help() -> str:
    """The ``--selector`` help text: the spec's grammar, examples, and where every name is
    listed (``fedsel methods`` reads the registries; :func:`modifier_help` its modifiers).

    Examples:
        >>> from selection.specs import selector_help
        >>> text = selector_help()
        >>> text.split("; ")[0]
        'Selector spec: NAME or NAME:ARGS, then @MODIFIERS joined by + if any'
        >>> "fedsel methods" in text
        True
    """
    return (
        "Selector spec: NAME or NAME:ARGS, then @MODIFIERS joined by + if any; e.g. eps:5, "
        "fisher-topk, maxmin:2@probe. Every NAME, its ARGS and every modifier: fedsel "
        "methods."
    )


def modifier_help() -> list[tuple[str, str]]:
    """What may follow a spec's ``@`` (``fedsel methods`` lists it), from the registries:
    (form, meaning) pairs.

    Examples:
        >>> from selection.specs import modifier_help
        >>> rows = dict(modifier_help())
        >>> rows["agg=RULE"].split(":")[0], "pool:P" in rows["MODEL"]
        ("the picks' aggregation weights", True)
    """
    from selection.aggregation import aggregation_forms
    from selection.information import information_models
    from selection.surrogates import surrogates

    infos = ", ".join(c.spec_form() for c in information_models().values())
    mods = ", ".join(n for n in surrogates() if n != DEFAULT_SURROGATE)
    return [
        ("MODEL", f"an information model: {infos} (listed above)"),
        ("SURROGATE", f"a surrogate of U(S), U_d(S): {mods} (listed below)"),
        ("verify, verify=M", f"verified picks: the M best candidates measured, the best by "
         f"the same criterion committed (verify alone: M = {DEFAULT_VERIFY})"),
        ("agg=RULE", f"the picks' aggregation weights: {aggregation_forms().replace('|', ', ')}"
         "; agg=best chooses them with the picks (with a surrogate of the aggregate, e.g. "
         "weighted)"),
    ]  # fmt: skip


def split_specs(text: str) -> list[str]:
    """A comma-separated list of selector specs, where specs may hold commas themselves.

    ``"weighted:1,0,0,eps:5,random"`` -> ``["weighted:1,0,0", "eps:5", "random"]``: a piece
    that is a plain number continues the previous spec's argument list; anything else starts
    a new spec.

    Examples:
        >>> from selection.specs import split_specs
        >>> split_specs("weighted:1,0,0,eps:5,random")
        ['weighted:1,0,0', 'eps:5', 'random']
        >>> split_specs(" maxmin:2@probe , composite:1,2,3,, all")
        ['maxmin:2@probe', 'composite:1,2,3', 'all']
    """
    out: list[str] = []
    for piece in (t.strip() for t in str(text).split(",")):
        if not piece:
            continue
        if out and ":" in out[-1] and _is_number(piece):
            out[-1] += "," + piece
        else:
            out.append(piece)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
