"""The registry of MILP backends: :func:`register_backend` and the look-ups by name.

Each backend module (:mod:`.highs`, :mod:`.cbc`, :mod:`.cpsat`, :mod:`.scip`) registers its
:class:`.model.LexBackend` subclass when imported; the solvers and the CLI find them here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selection.solvers.params import Route

if TYPE_CHECKING:
    from selection.solvers.milp.model import LexBackend
    from selection.solvers.milp.spec import MilpSpec

__all__ = [
    "register_backend",
    "integer_data",
    "milp_backend_class",
    "milp_backends",
    "make_backend",
]

_REGISTRY: dict[str, type[LexBackend]] = {}


def register_backend(name: str):
    """Class decorator: make a :class:`LexBackend` subclass available as ``name``."""

    def deco(cls: type[LexBackend]) -> type[LexBackend]:
        from selection.plugins import guard_builtin

        guard_builtin(_REGISTRY, name, cls, "MILP backend")
        _REGISTRY[name] = cls
        cls.name = name
        return cls

    return deco


def integer_data(route: str) -> bool:
    """Whether ``route`` solves the data rounded to integers (``LexBackend.integer_data``),
    so its rows are the true rows only where the data are multiples of 1/scale."""
    return route != Route.ENUM and milp_backend_class(route).integer_data


def milp_backend_class(name: str) -> type[LexBackend]:
    """The registered backend class ``name``."""
    from selection.plugins import load_plugins

    load_plugins()
    return _REGISTRY[name]


def milp_backends() -> tuple[str, ...]:
    """Names of the registered MILP backends, in listing order (``order``, then registration);
    a plugin's backend module registers itself when loaded (:mod:`selection.plugins`)."""
    from selection.plugins import load_plugins

    load_plugins()
    names = list(_REGISTRY)
    return tuple(sorted(names, key=lambda n: (_REGISTRY[n].order, names.index(n))))


def make_backend(
    name: str,
    spec: MilpSpec,
    *,
    seed: int = 0,
    threads: int | None = None,
    mip_gap: float = 0.0,
    abs_gap: float = 0.0,
    **options,
) -> LexBackend:
    """Build the persistent model of ``spec`` in the registered backend ``name``.

    ``options`` reach backends that take them (CP-SAT's ``scale``).
    """
    if name not in milp_backends():
        raise ValueError(
            f"unknown MILP backend {name!r}; choose one of {', '.join(milp_backends())}"
        )
    return _REGISTRY[name](
        spec, seed=seed, threads=threads, mip_gap=mip_gap, abs_gap=abs_gap, **options
    )
