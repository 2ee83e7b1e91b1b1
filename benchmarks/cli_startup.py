"""How long the ``fedsel`` command takes to answer before it does any work.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 15]

Times, end to end as a user's shell sees them (a fresh process each time, the median over
``--repeat`` runs, after one warm-up run of each), ``fedsel --help`` (the command listing),
``fedsel --version``, ``fedsel solve --help`` (a selection command: torch-free) and
``fedsel train --help`` (a training command: its module loaded), beside ``python -c pass``
(the interpreter alone) and ``python -c "import typer"`` (the CLI framework alone): what no
command can beat. Writes ``results/benchmarks/cli_startup.{csv,md}``; the target is
``fedsel --help`` ≤ 0.3 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks"
FEDSEL = str(Path(sys.executable).with_name("fedsel"))

CASES = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("python -c 'import typer'", [sys.executable, "-c", "import typer"]),
    ("fedsel --help", [FEDSEL, "--help"]),
    ("fedsel --version", [FEDSEL, "--version"]),
    ("fedsel solve --help", [FEDSEL, "solve", "--help"]),
    ("fedsel train --help", [FEDSEL, "train", "--help"]),
]


def _once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--note", default="", help="what else ran on the machine (in the table)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from fl_oracle.experiments.run_record import cpu_model
    from selection.atomic import write_table_atomic, write_text_atomic

    rows = []
    for name, cmd in CASES:
        _once(cmd)  # warm the file cache
        times = [_once(cmd) for _ in range(args.repeat)]
        rows.append(
            dict(
                command=name,
                median_s=statistics.median(times),
                min_s=min(times),
                max_s=max(times),
                runs=args.repeat,
            )
        )
        print(f"{name}: median {rows[-1]['median_s']:.3f} s", file=sys.stderr)
    df = pd.DataFrame(rows)
    base = df.set_index("command")["median_s"]
    df["vs_python"] = df["median_s"] / base["python -c pass"]
    write_table_atomic(df, OUT / "cli_startup.csv")
    helpt = base["fedsel --help"]
    typer_t = base["python -c 'import typer'"]
    lines = [
        "# fedsel start-up: the time before a command does any work",
        "",
        f"`.venv/bin/python benchmarks/cli_startup.py --repeat {args.repeat}"
        + (f' --note "{args.note}"' if args.note else "")
        + f"` — {cpu_model()}, "
        f"Python {platform.python_version()}; a fresh process per run, medians"
        + (f"; {args.note}." if args.note else "."),
        "",
        "| command | median (s) | min (s) | max (s) | × `python -c pass` |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | "
            f"{r['vs_python']:.1f}× |"
            for r in df.to_dict("records")
        ),
        "",
        f"`fedsel --help` answers in {helpt:.2f} s, "
        + ("within" if helpt <= 0.3 else "over")
        + " the 0.3 s target, "
        f"{helpt / typer_t:.1f}× the CLI framework's own import: "
        "listing the commands loads neither numpy, pandas, pymoo nor torch (each command's "
        "module is imported only when that command runs).",
    ]
    write_text_atomic("\n".join(lines) + "\n", OUT / "cli_startup.md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
