"""Running a grid study: every cell screened, the leaders confirmed, the map written.

:func:`run_grid` owns the folder's layout and the sequential design; how one study folder is
run (the data recorded, the runs made on the local pool or on Ray, the study assembled) is the
caller's ``run_cell`` (``fedsel study`` passes its own), so a test can run a grid on tiny data.

The folder::

    study.toml                 the grid (a restart with another grid is refused, --grow extends)
    cells/<slug>/              one paired study per cell (its runs, verdict, cost table, report)
    cells/<slug>/confirm/      the cell's held-out seeds, where its screen had a leader
    grid.csv, grid.md, map.html
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fl_oracle.experiments.study.grid import GridSettings, confirm_settings
from fl_oracle.experiments.study.grid_map import grid_table, grid_verdict, leads, map_html
from fl_oracle.experiments.study.settings import StudySettings
from selection.atomic import write_table_atomic, write_text_atomic
from selection.plotly_js import write_report

if TYPE_CHECKING:
    import pandas as pd

    from fl_oracle.experiments.study.assembly import StudyResult

__all__ = ["RunCell", "check_stored_grid", "run_grid"]

#: ``(settings, folder, label) -> StudyResult | None``: run (or, reporting only, assemble) one
#: study folder; None where it holds no finished run
RunCell = Callable[[StudySettings, Path, str], "StudyResult | None"]


def check_stored_grid(grid: GridSettings, out: Path, *, grow: bool) -> None:
    """The folder's stored grid equals ``grid``; or, with ``grow``, ``grid`` extends it: the
    same base settings apart from more seeds and entries appended, every stored cell kept
    (its runs are validated again by the cell's own study). Writes ``grid``'s TOML.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from fl_oracle.experiments.study.grid import GridSettings
        >>> from fl_oracle.experiments.study.grid_run import check_stored_grid
        >>> toml = '''
        ... k = 2
        ... selectors = ["proportional", "random"]
        ... [grid]
        ... k = [2, 3]
        ... '''
        >>> grid = GridSettings.from_toml(toml)
        >>> more = GridSettings.from_toml(toml.replace("[2, 3]", "[2, 3, 4]"))  # one cell more
        >>> tmp = tempfile.TemporaryDirectory()
        >>> out = Path(tmp.name)
        >>> check_stored_grid(grid, out, grow=False)  # a new folder: the grid's study.toml
        >>> GridSettings.from_toml((out / "study.toml").read_text()) == grid
        True
        >>> check_stored_grid(more, out, grow=False)  # another grid, without --grow
        Traceback (most recent call last):
            ...
        ValueError: ... holds a grid with other settings; run it with the same settings to ...
        >>> check_stored_grid(more, out, grow=True)  # grown: every stored cell kept
        >>> [c.slug for c in GridSettings.from_toml((out / "study.toml").read_text()).cells]
        ['k2', 'k3', 'k4']
        >>> check_stored_grid(grid, out, grow=True)  # back to the smaller grid: k4 is lost
        Traceback (most recent call last):
            ...
        ValueError: ...: --grow keeps every cell; the new grid drops k4
        >>> tmp.cleanup()
    """
    path = out / "study.toml"
    if path.is_file():
        stored = GridSettings.from_toml(path.read_text(encoding="utf-8"))
        if stored != grid:
            if not grow:
                raise ValueError(
                    f"{out} holds a grid with other settings; run it with the same settings to "
                    "continue it, --grow to extend it, or choose another --out"
                )
            lost = [c.slug for c in stored.cells if c.slug not in {x.slug for x in grid.cells}]
            if lost:
                raise ValueError(f"{out}: --grow keeps every cell; the new grid drops {lost[0]}")
            if grid.base.seeds < stored.base.seeds:
                raise ValueError(f"{out}: --grow adds seeds; the new grid has fewer")
            # every kept cell must be a growth of its stored study (entries appended, more
            # seeds, nothing else changed), checked before study.toml is rewritten: a refused
            # --grow leaves the grid as it was, so both commands can still continue it
            from fl_oracle.experiments.study.runs import check_growth

            new = {c.slug: c.settings for c in grid.cells}
            for cell in stored.cells:
                if new[cell.slug] != cell.settings:
                    check_growth(cell.settings, new[cell.slug], out / "cells" / cell.slug)
    write_text_atomic(grid.to_toml(), path)


def run_grid(
    grid: GridSettings, out: str | Path, *, run_cell: RunCell
) -> tuple[pd.DataFrame, list[str]]:
    """Screen every cell, confirm the cells whose leader is ahead, write the map.

    Returns:
        ``grid.csv``'s table and the verdict's lines.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from fl_oracle.experiments.study.grid import GridSettings
        >>> from fl_oracle.experiments.study.grid_run import run_grid
        >>> toml = '''
        ... seeds = 2
        ... rounds = 2
        ... k = 2
        ... selectors = ["proportional", "random"]
        ... [grid]
        ... k = [2, 3]
        ... '''
        >>> grid = GridSettings.from_toml(toml)
        >>> calls = []
        >>> def run_cell(settings, folder, label):  # no finished run yet: nothing to confirm
        ...     calls.append((label, settings.k, folder.name))
        >>> with tempfile.TemporaryDirectory() as d:
        ...     table, lines = run_grid(grid, d, run_cell=run_cell)
        ...     written = sorted(p.name for p in Path(d).iterdir())
        >>> calls
        [('cell 1/2 k2', 2, 'k2'), ('cell 2/2 k3', 3, 'k3')]
        >>> table.to_dict("list"), written
        ({'cell': ['k2', 'k3'], 'k': [2, 3]}, ['grid.csv', 'grid.md', 'map.html'])
        >>> len(lines), lines[0].split(";")[0]  # the design in words; no panel has a leader
        (1, '2 cells x 2 entries, screened on seeds 0-1 (2 rounds)')
    """
    out = Path(out)
    n = len(grid.cells)
    screens: dict[str, StudyResult] = {}
    for i, cell in enumerate(grid.cells, start=1):
        res = run_cell(cell.settings, out / "cells" / cell.slug, f"cell {i}/{n} {cell.slug}")
        if res is not None:
            screens[cell.slug] = res
    confirms: dict[str, StudyResult] = {}
    if grid.confirm_seeds:
        for i, cell in enumerate(grid.cells, start=1):
            res = screens.get(cell.slug)
            if res is None or res.missing:
                continue  # a partial screen decides nothing
            ahead = [lead.leader for lead in leads(res).values() if lead.ahead]
            if not ahead:
                continue
            folder = out / "cells" / cell.slug / "confirm"
            # a leader confirmed before (a grid grown since) keeps its runs: entries only grow
            before = _stored_entries(folder)
            held = confirm_settings(grid, cell, list(dict.fromkeys([*before, *ahead])))
            conf = run_cell(held, folder, f"confirm {i}/{n} {cell.slug}")
            if conf is not None:
                confirms[cell.slug] = conf
    table = grid_table(grid, screens, confirms)
    lines = grid_verdict(grid, table)
    write_table_atomic(table, out / "grid.csv")
    write_text_atomic("\n\n".join(lines) + "\n", out / "grid.md")
    write_report(map_html(grid, table, lines), out / "map.html")
    return table, lines


def _stored_entries(folder: Path) -> tuple[str, ...]:
    """The entries of the study stored in ``folder`` (none where there is none)."""
    path = folder / "study.toml"
    if not path.is_file():
        return ()
    return StudySettings.from_toml(path.read_text(encoding="utf-8")).selectors
