"""``rule``: the drivers' information model of a baseline rule whose spec names none.

Registered like every model, so a driver asks it what it does (``rule_reads``, its
``server_evaluates``, its ``check_k``) instead of comparing its name; a spec cannot name it
(``nameable``), so listings, errors and the spec grammar show only the models users choose.
"""

from __future__ import annotations

import pandas as pd

from selection.errors import SelectionError
from selection.information.base import (
    InformationModel,
    RoundInputs,
    _information_of,
    register,
)

__all__ = ["RULE", "Rule"]


@register
class Rule(InformationModel):
    """The drivers' model of a baseline rule whose spec names none (``rule``): the simulator
    computes only what the rule reads (``Baseline.reads``), measured by the driver's rule
    view (``probe``, or ``fresh`` where a run's statistics are kept as ground truth), and the
    run is charged for that (``Spec.information``). A spec cannot name it (``nameable``).

    Examples:
        >>> from selection.information import RULE, Rule, driver_information
        >>> RULE.model is Rule, RULE.model.rule_reads, driver_information("rule") == RULE
        (True, True, True)
        >>> from selection.information import information_models, parse_information
        >>> "rule" in information_models()
        False
        >>> parse_information("rule")
        Traceback (most recent call last):
        ...
        selection.errors.SelectionError: unknown information model 'rule' (one of fresh, ...)
    """

    name = "rule"
    summary = "a baseline rule's own reads, measured by the driver's rule view"
    rule_reads = True
    nameable = False

    def view(self, inputs: RoundInputs) -> pd.DataFrame:
        raise SelectionError(
            "information model rule has no view of its own: a driver measures what the rule "
            "reads with its rule view (probe or fresh)"
        )


#: the parsed model of a baseline rule whose spec names none (:class:`Rule`)
RULE = _information_of(Rule, None)
