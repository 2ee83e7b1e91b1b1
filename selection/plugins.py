"""Formulations, surrogates, baselines, information models and MILP backends from other
installed packages, found through entry points.

A package declares what it adds in its own ``pyproject.toml``::

    [project.entry-points."fedsel.formulations"]
    toy-top = "toy_fedsel.formulation"          # a module: importing it registers

    [project.entry-points."fedsel.baselines"]
    toy-rule = "toy_fedsel.rule:ToyRule"        # or the class itself

Each entry point is loaded once per process, the first time any registry is read
(:func:`load_plugins`), so whatever the package registers reaches ``fedsel methods``, every
command, the study's run processes and Flower's nodes alike. An entry point naming a class
is registered by its group's registry (:func:`plugin_classes`) if importing did not. A plugin that fails to load is a
:class:`~selection.errors.SelectionError` naming the entry point and its package (one line,
exit 2 on the command line).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from importlib import metadata

from selection.errors import SelectionError

__all__ = [
    "GROUPS",
    "Plugin",
    "load_plugins",
    "loaded_plugins",
    "plugin_classes",
    "guard_builtin",
]

#: the packages whose registrations are fedsel's own (a plugin may not replace them)
BUILTIN = ("selection.", "fl_oracle.")


def guard_builtin(registry: dict, name: str, cls: type, what: str) -> None:
    """Refuse (TypeError) a class from outside fedsel registering under a built-in's name: a
    plugin registering ``eps`` silently replaced the exact solver (a non-optimal answer
    reported with exit 0). Re-registering from fedsel itself, or one plugin after another,
    stays allowed.

    Examples:
        >>> from selection.solvers.registry import SOLVERS
        >>> class Fake:
        ...     __module__ = "toy_fedsel.formulation"
        >>> guard_builtin(SOLVERS, "eps", Fake, "formulation")
        Traceback (most recent call last):
        ...
        TypeError: formulation 'eps' is built into fedsel (selection.solvers.eps.EpsSolver); a plugin cannot replace it: register it under another name
        >>> guard_builtin(SOLVERS, "toy-top", Fake, "formulation")  # a new name: fine
    """
    old = registry.get(name)
    if old is None or old is cls:
        return
    ours = str(getattr(old, "__module__", "")).startswith(BUILTIN)
    theirs = str(getattr(cls, "__module__", "")).startswith(BUILTIN)
    if ours and not theirs:
        raise TypeError(
            f"{what} {name!r} is built into fedsel ({old.__module__}.{old.__qualname__}); a "
            "plugin cannot replace it: register it under another name"
        )


#: entry-point group -> what its entry points add
GROUPS: dict[str, str] = {
    "fedsel.formulations": "formulation (selection.solvers.register)",
    "fedsel.surrogates": "surrogate (selection.surrogates.register)",
    "fedsel.baselines": "baseline rule (selection.baselines.register)",
    "fedsel.information": "information model (selection.information.register)",
    "fedsel.backends": "MILP backend (selection.solvers.milp.registry.register_backend)",
}


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its group, name, target, the package that declares it and
    what loading it gave (a module or a class).

    Examples:
        >>> from selection.plugins import GROUPS, Plugin
        >>> plugin = Plugin("fedsel.baselines", "toy-lowest-b", "toy_fedsel.rule:LowestDivergence",
        ...     "toy-fedsel")  # the record of the plugins how-to's toy rule, before loading
        >>> GROUPS[plugin.group], plugin.value.partition(":")[0], plugin.obj
        ('baseline rule (selection.baselines.register)', 'toy_fedsel.rule', None)
    """

    group: str
    name: str
    value: str
    package: str
    obj: object = None


_LOADED: list[Plugin] = []
_STATE = {"loading": False, "done": False}


def load_plugins() -> list[Plugin]:
    """Load every entry point of :data:`GROUPS` (once per process; later calls return what
    was loaded).

    Examples:
        >>> from selection.plugins import GROUPS, load_plugins
        >>> plugins = load_plugins()  # every installed package's entry points ([] without any)
        >>> load_plugins() == plugins  # loaded once: a later call loads nothing again
        True
        >>> all(p.group in GROUPS and p.obj is not None for p in plugins)
        True
    """
    if _STATE["done"] or _STATE["loading"]:
        return list(_LOADED)
    _STATE["loading"] = True
    try:
        for group in GROUPS:
            for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
                package = ep.dist.name if ep.dist is not None else "?"
                try:
                    obj = ep.load()
                except SelectionError:
                    raise
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure, named
                    # (a plugin calling sys.exit(3) while importing ended fedsel silently)
                    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    if isinstance(exc, SystemExit):
                        why = f"it called sys.exit({exc.code!r})"
                    raise SelectionError(
                        f"plugin {ep.name!r} ({group}, package {package}) failed to load: {why}"
                    ) from None
                if not (inspect.ismodule(obj) or isinstance(obj, type)):
                    raise SelectionError(
                        f"plugin {ep.name!r} ({group}, package {package}) names a "
                        f"{type(obj).__name__}, not a module or a class"
                    )
                _LOADED.append(Plugin(group, ep.name, ep.value, package, obj))
        _STATE["done"] = True
    finally:
        _STATE["loading"] = False
    return list(_LOADED)


def loaded_plugins() -> list[Plugin]:
    """The entry points loaded so far (:func:`load_plugins` loads them).

    Examples:
        >>> from selection.plugins import load_plugins, loaded_plugins
        >>> loaded_plugins() == load_plugins()  # what the first load gave, as a new list
        True
        >>> loaded_plugins() is loaded_plugins()  # a copy: changing it changes nothing
        False
    """
    return list(_LOADED)


def plugin_classes(group: str, kind: type) -> list[type]:
    """The classes of ``kind`` that ``group``'s entry points name directly (loading the
    plugins first): the registry reading them registers each.

    Examples:
        >>> from selection.baselines import Baseline, baselines
        >>> from selection.plugins import loaded_plugins, plugin_classes
        >>> rules = plugin_classes("fedsel.baselines", Baseline)  # [] without a plugin package
        >>> all(issubclass(c, Baseline) and c.name in baselines() for c in rules)
        True
        >>> len(rules) <= len(loaded_plugins()), plugin_classes("fedsel.unknown", object)
        (True, [])
    """
    load_plugins()
    named = [p for p in _LOADED if p.group == group and isinstance(p.obj, type)]
    wrong = [p for p in named if not issubclass(p.obj, kind)]
    if wrong:  # an entry point naming a class of another kind: refused, not ignored
        p = wrong[0]
        raise SelectionError(
            f"plugin {p.name!r} ({group}, package {p.package}) names {p.obj.__name__}, "
            f"not a {kind.__name__}"
        )
    return [p.obj for p in named]
