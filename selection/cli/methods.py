"""``fedsel methods``: list what the registries hold (read when the command runs)."""

from __future__ import annotations

import typer

__all__ = ["methods", "register"]


def methods() -> None:
    """List the registered formulations, baselines, information models, objectives,
    surrogates and MILP backends, and the installed plugins that added some of them."""
    from selection.objectives import OBJECTIVES
    from selection.solvers.registry import solvers

    print("formulations (--method; selector spec):")
    for name, cls in solvers().items():
        sweep = f"sweeps {cls.param}" if cls.param else "one front"
        print(f"  {name:<12} {cls.spec_form or name:<34} {sweep:<14} {cls.summary}")
    from selection.baselines import baselines

    print("baselines (selector spec; * not counted as a baseline by the study; reads):")
    for name, b in baselines().items():
        mark = "" if b.is_baseline else " *"
        print(f"  {name:<16} {b.spec_form() + mark:<20} {b.summary} [reads {b.reads}]")
    from selection.information import information_models

    print("information models (SPEC@NAME; train --stats; what every client does per round):")
    for name, cls in information_models().items():
        mark = " (the oracle's upper bound)" if cls.upper_bound else ""
        print(f"  {name:<12} {cls.spec_form():<12} {cls.summary}{mark}")
    from selection.specs import modifier_help

    print("selector spec modifiers (SPEC@MOD+MOD, e.g. maxmin:2@probe+agg=uniform):")
    for form, meaning in modifier_help():
        print(f"  {form:<17} {meaning}")
    print("objectives (--objectives):")
    for name, o in OBJECTIVES.items():
        print(f"  {name:<17} {o.sense}  {o.label}")
    from selection.surrogates import surrogates

    print("surrogates of U(S), U_d(S) (--surrogate; SPEC@NAME):")
    for name, cls in surrogates().items():
        print(f"  {name:<12} {cls.structure:<18} {cls.summary}")
    from selection.solvers.milp.model import milp_backend_class, milp_backends

    print("MILP backends (--backend; besides auto, the measured portfolio, and enum):")
    for name in milp_backends():
        cls = milp_backend_class(name)
        data = "integer data (rounded to 1/scale)" if cls.integer_data else "float data"
        print(f"  {name:<12} {data:<34} {(cls.__doc__ or '').strip().splitlines()[0]}")
    from selection.plugins import loaded_plugins

    plugins = loaded_plugins()
    if plugins:
        print("plugins (entry points of installed packages):")
        for p in plugins:
            print(f"  {p.name:<16} {p.group:<20} {p.value} (package {p.package})")


def register(app: typer.Typer) -> None:
    """Add ``methods`` to the fedsel app."""
    app.command("methods")(methods)
