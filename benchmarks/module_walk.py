"""How many modules ``fedsel study --config`` passes through before its first run trains.

    .venv/bin/python benchmarks/module_walk.py [--tree DIR ...] [--label NAME ...] [--md FILE]

For each source tree (``--tree``, default this checkout; a ``git worktree`` of another commit
measures that commit with the same interpreter), a fresh process with ``PYTHONPATH`` on the
tree runs a tiny study (:data:`CONFIG`: 1 seed, 2 rounds, entries ``proportional`` and
``eps:5``, 2 clients per domain of generated data, 1 worker, so the runs are in-process):

    fedsel study --config tiny.toml --data generated --out DIR --workers 1 --no-progress

under ``sys.setprofile``. The walk is the sequence of the project's functions called
(``fl_oracle.*``, ``selection.*``; a function's module is its globals' ``__name__``) from the
call of the command's function (``fl_oracle.cli.study.study``) up to the first call of
``fl_oracle.experiments.loop.run_training`` (the first run starts training), not counting
what runs while a module is imported (its body, the decorators it calls: import order, not the
command's flow). Consecutive calls within one module are one visit. Reported per tree:

* ``calls``: project function calls in the walk;
* ``visits``: module changes (the walk with consecutive repeats collapsed);
* ``modules``: distinct modules the walk passes through;
* ``re-entries``: visits to a module already visited earlier in the walk (a return to a
  module after leaving it for another project module);
* the same over the walk's settings part: up to the first call of
  ``fl_oracle.experiments.runner.OracleFactory.load`` (the settings read, checked and turned
  into runs; the data not yet loaded);
* ``modules`` and ``re-entries`` over the walk's first ``--steps`` calls (default 1,600).

The data are generated once per tree into a fresh cache (``FEDSEL_CACHE``) by an unmeasured
warm-up study in another process, so the measured walk reads cached data as a second run does
and both trees do the same data work. Writes ``--md`` (default
``results/benchmarks/module_walk.md``) and prints each walk's module list with ``--verbose``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the tiny study measured: what fedsel study --config reads
CONFIG = """\
seeds = 1
rounds = 2
k = 2
bootstrap = 200
selectors = ["proportional", "eps:5"]
reference = "proportional"

[oracle]
clients_per_domain = 2
samples_per_client = 20
val_per_domain = 20
test_per_domain = 20
device = "cpu"
"""

#: the child: runs the study under the profiler, prints the walk as JSON on its last line
CHILD = r"""
import json, sys
PROJECT = ("fl_oracle", "selection")
START = ("fl_oracle.cli.study", "study")
STOP = ("fl_oracle.experiments.loop", "run_training")
DATA = ("fl_oracle.experiments.runner", "load")
walk, state = [], {"on": False, "done": False, "importing": 0, "data": None}

def profile(frame, event, arg):
    code = frame.f_code
    if code.co_name == "<module>":
        if event == "call":
            state["importing"] += 1
        elif event == "return":
            state["importing"] -= 1
        return
    if event != "call" or state["importing"] or state["done"]:
        return
    module = frame.f_globals.get("__name__", "")
    if (module, code.co_name) == START:
        state["on"] = True
    if (module, code.co_name) == STOP:
        state["done"] = True
        sys.setprofile(None)
        return
    if state["on"] and (module, code.co_name) == DATA and state["data"] is None:
        state["data"] = len(walk)
    if state["on"] and module.split(".")[0] in PROJECT:
        walk.append(module)

from fl_oracle.cli import main
argv = sys.argv[1:]
if argv[0] == "--warm-up":
    argv = argv[1:]
else:
    sys.setprofile(profile)
try:
    main(argv)
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
finally:
    sys.setprofile(None)
print(json.dumps({"walk": walk, "reached": state["done"], "data": state["data"]}))
"""


def summarize(walk: list[str]) -> dict[str, int]:
    """Calls, visits, distinct modules and re-entries of a walk (module docstring).

    Examples:
        >>> summarize(["a", "a", "b", "a", "c", "b"])
        {'calls': 6, 'visits': 5, 'modules': 3, 're-entries': 2}
    """
    visits = [m for i, m in enumerate(walk) if i == 0 or walk[i - 1] != m]
    return {
        "calls": len(walk),
        "visits": len(visits),
        "modules": len(set(visits)),
        "re-entries": len(visits) - len(set(visits)),
    }


def measure(tree: Path) -> dict:
    """The walk of ``fedsel study --config`` in ``tree`` (a fresh process, cached data)."""
    with tempfile.TemporaryDirectory(prefix="module-walk-") as tmp:
        tmp = Path(tmp)
        (tmp / "tiny.toml").write_text(CONFIG, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(tree), "FEDSEL_CACHE": str(tmp / "cache")}
        run = [
            "study",
            "--config",
            "tiny.toml",
            "--data",
            "generated",
            "--workers",
            "1",
            "--no-progress",
        ]

        def child(*argv: str) -> str:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, *argv], cwd=tmp, env=env, capture_output=True,
                text=True,
            )  # fmt: skip
            if done.returncode:
                raise SystemExit(f"{tree}: fedsel {' '.join(argv)} failed:\n{done.stderr}")
            return done.stdout

        child("--warm-up", *run, "--out", "warm")  # generates and caches the data
        out = json.loads(child(*run, "--out", "measured").strip().splitlines()[-1])
    if not out["reached"] or out["data"] is None:
        raise SystemExit(f"{tree}: no run started training, or no data were loaded")
    return out


def _commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    return done.stdout.strip() or "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, action="append", help="source tree (repeatable)")
    ap.add_argument("--label", action="append", help="a name per --tree (default: its commit)")
    ap.add_argument("--steps", type=int, default=1600, help="the walk's first calls, also")
    ap.add_argument("--md", type=Path, default=ROOT / "results" / "benchmarks" / "module_walk.md")
    ap.add_argument("--verbose", action="store_true", help="print each walk's modules")
    args = ap.parse_args()
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    labels = args.label or []
    rows, walks = [], []
    for i, tree in enumerate(trees):
        got = measure(tree)
        walk = got["walk"]
        part = {
            "to the data": summarize(walk[: got["data"]]),
            "to the first training": summarize(walk),
            f"first {args.steps} calls": summarize(walk[: args.steps]),
        }
        label = labels[i] if i < len(labels) else _commit(tree)
        rows.append((label, _commit(tree), part))
        walks.append(list(dict.fromkeys(walk)))
        print(f"{label}: {part}", file=sys.stderr)
        if args.verbose:
            print("\n".join(dict.fromkeys(walk)), file=sys.stderr)
    command = shlex.join(["benchmarks/module_walk.py", *sys.argv[1:]])
    made = [
        f"`git worktree add {tree} {commit}`"
        for tree, (_, commit, _) in zip(trees, rows, strict=True)
        if tree != ROOT
    ]
    lines = [
        "# fedsel study --config: the modules its setting passes through",
        "",
        f"`.venv/bin/python {command}`" + (f" (after {', '.join(made)})" if made else ""),
        "",
        "The walk: the project functions called (`fl_oracle.*`, `selection.*`) from the call "
        "of the command's function `fl_oracle.cli.study.study` to the first call of "
        "`fl_oracle.experiments.loop.run_training` (the first run starts training), under "
        "`sys.setprofile`, module bodies run by imports not counted; a visit is a run of calls "
        "in one module, a re-entry a visit to a module visited before. The study: "
        "1 seed, 2 rounds, K 2, entries `proportional` and `eps:5`, 2 clients per domain of "
        "generated data (cached by an unmeasured warm-up), 1 worker (the runs in-process). "
        "Method and settings in the script's docstring; the same for every row.",
        "",
        "| tree | commit | walk | calls | visits | modules | re-entries |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for label, commit, part in rows:
        for name, n in part.items():
            lines.append(
                f"| {label} | {commit} | {name} | {n['calls']} | {n['visits']} | {n['modules']} "
                f"| {n['re-entries']} |"
            )
    for i in range(1, len(rows)):
        added = [m for m in walks[i] if m not in walks[i - 1]]
        gone = [m for m in walks[i - 1] if m not in walks[i]]
        lines += [
            "",
            f"{rows[i][0]} against {rows[i - 1][0]}, the whole walk's modules: added "
            f"{', '.join(f'`{m}`' for m in added) or 'none'}; gone "
            f"{', '.join(f'`{m}`' for m in gone) or 'none'}.",
        ]
    args.md.parent.mkdir(parents=True, exist_ok=True)
    args.md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.md}", file=sys.stderr)


if __name__ == "__main__":
    main()
