"""Counted nouns agree with their number (issue 63's walk: "1 rounds", "1 fronts", "over 1
entries", "1 measured rounds"): a count formatted into a message or report goes through
:func:`selection.words.counted`, which this test holds the f-strings of the package to."""

from __future__ import annotations

import ast
import re

from selection.words import counted

from helpers import ROOT

NOUNS = ("rounds", "fronts", "entries", "points", "seeds", "selectors", "runs", "rows", "cells",
         "baselines", "nodes", "federations", "measured rounds")  # fmt: skip
# modules other engineers own (their counts are theirs to word)
ELSEWHERE = ("selection/solvers/", "selection/information/", "fl_oracle/sim/")
# a count that is never 1 where it is printed, or not a count (a list, a bad value)
NEVER_ONE = {
    ("fl_oracle/experiments/study/assembly.py", "', '.join(map(str, looks))"),
    ("fl_oracle/experiments/oracle_run.py", "every!r"),
}


def test_counted_agrees_with_its_number():
    assert [counted(n, "round") for n in (0, 1, 2)] == ["0 rounds", "1 round", "2 rounds"]
    assert counted(1, "entry") == "1 entry" and counted(4, "entry") == "4 entries"
    assert counted(1, "measured round") == "1 measured round"


def test_no_message_counts_a_plural_noun_by_hand():
    bad = []
    noun = re.compile(rf"^ ({'|'.join(NOUNS)})\b")
    for folder in ("selection", "fl_oracle"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ELSEWHERE):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.JoinedStr):
                    continue
                parts = node.values
                for value, after in zip(parts, parts[1:], strict=False):
                    if not (isinstance(value, ast.FormattedValue) and value.format_spec is None):
                        continue
                    if not (isinstance(after, ast.Constant) and noun.match(str(after.value))):
                        continue
                    expr = ast.unparse(value.value) + ("!r" if value.conversion == 114 else "")
                    if expr.startswith("signed("):  # a decimal number: "+1.0 points"
                        continue
                    if (rel, expr) not in NEVER_ONE:
                        bad.append(f"{rel}:{node.lineno}: {{{expr}}}{after.value[:12]}")
    assert bad == [], "counts written by hand (use selection.words.counted):\n" + "\n".join(bad)
