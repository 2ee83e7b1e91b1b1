"""A grid of federations in one study: the settings, the cells and the sequential design.

A study TOML with ``[grid]`` (one product of federation settings) or ``[[grid]]`` tables (a
union of products) runs every cell of the grid as its own paired study, over the same entries
and seeds, in ``cells/<slug>/`` of one folder. An axis is ``k`` or an ``[oracle]`` setting
(``dirichlet_alpha``, ``size_sigma``, ``clients_per_domain``, ``samples_per_client``, ``mu``,
...), its values a list (``"none"`` for an unset one); an axis a table does not name keeps the
study's own value.

The design is sequential (:func:`.grid_run.run_grid`): every cell is first **screened** on the
study's seeds; a cell whose leading affordable formulation is ahead of the best baseline on the
screen (on final worst-domain or final average accuracy) is then **confirmed** on held-out
seeds (``confirm_first_seed`` on, ``confirm_seeds`` of them) in ``cells/<slug>/confirm/``,
where the leader runs against every counted baseline. The screen decides who leads; only the
held-out seeds decide whether the lead holds (:mod:`.grid_map`).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from fl_oracle.experiments.study.settings import StudySettings, _oracle_keys
from selection.toml_text import toml_value

__all__ = ["Cell", "GridSettings", "confirm_settings", "is_grid"]

# short names of the common axes in a cell's folder name (others are written in full)
_SHORT = {
    "k": "k",
    "dirichlet_alpha": "alpha",
    "size_sigma": "sigma",
    "clients_per_domain": "cpd",
    "samples_per_client": "spc",
}
_GRID_KEYS = ("confirm_seeds", "confirm_first_seed")
# the [oracle] values an image folder gives unless the TOML does (fitted per cell)
_FITTED = ("domains", "val_per_domain", "samples_per_client")


def is_grid(text: str) -> bool:
    """Does the study TOML text describe a grid (a ``grid`` table or array of tables)?

    Examples:
        >>> from fl_oracle.experiments.study.grid import is_grid
        >>> is_grid("k = 2"), is_grid("grid = {k = [2, 5]}"), is_grid("k = [")  # [: not TOML
        (False, True, False)
    """
    try:
        return "grid" in tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False  # the study's own reader says what is wrong


def _value_text(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, dict):
        return "+".join(f"{d}{n}" for d, n in v.items())
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


@dataclass(frozen=True)
class Cell:
    """One federation of the grid: every axis's value here (``values``, axis order), the
    folder name and the cell's study settings (the grid's seeds and entries).

    Examples:
        >>> from fl_oracle.experiments.study.grid import GridSettings
        >>> toml = '''
        ... seeds = 2
        ... k = 2
        ... selectors = ["proportional", "random", "eps-lt:5@probe"]
        ... [grid]
        ... k = [2, 5]
        ... dirichlet_alpha = ["none", 0.5]
        ... '''
        >>> cell = GridSettings.from_toml(toml).cells[3]  # a grid builds its cells
        >>> cell.slug, cell.label, cell.value("k")
        ('k5-alpha0.5', 'k=5, dirichlet_alpha=0.5', 5)
        >>> cell.settings.k, cell.settings.oracle["dirichlet_alpha"], cell.settings.seeds
        (5, 0.5, 2)
    """

    values: tuple[tuple[str, Any], ...]
    settings: StudySettings

    @property
    def slug(self) -> str:
        """``k5-alpha0.5-sigma0``: the cell's folder under ``cells/``."""
        parts = [f"{_SHORT.get(a, a)}{_value_text(v)}" for a, v in self.values]
        return re.sub(r"[^A-Za-z0-9.+_-]+", "_", "-".join(parts))

    @property
    def label(self) -> str:
        """``k=5, dirichlet_alpha=0.5``: the axes in words."""
        return ", ".join(f"{a}={_value_text(v)}" for a, v in self.values)

    def value(self, axis: str) -> Any:
        return dict(self.values)[axis]


def _oracle_default(key: str) -> Any:
    from fl_oracle.sim.config import OracleConfig

    f = {x.name: x for x in fields(OracleConfig)}[key]
    return f.default


@dataclass(frozen=True)
class GridSettings:
    """A grid study: the base settings (entries, seeds, rounds, the oracle), the grid's
    product tables (``blocks``: axis -> values, each a product) and the confirmation's
    held-out seeds.

    Examples:
        >>> from fl_oracle.experiments.study.grid import GridSettings
        >>> toml = '''
        ... seeds = 2
        ... k = 2
        ... selectors = ["proportional", "random", "eps-lt:5@probe"]
        ... [[grid]]
        ... k = [2, 3]
        ... [[grid]]
        ... k = [2]
        ... size_sigma = [1.0]
        ... '''
        >>> grid = GridSettings.from_toml(toml)  # a union of two products
        >>> grid.axes, [c.slug for c in grid.cells]
        (['k', 'size_sigma'], ['k2-sigma0', 'k3-sigma0', 'k2-sigma1'])
        >>> grid.confirm_first_seed, grid.confirm_seeds  # the held-out seeds 100..104
        (100, 5)
        >>> GridSettings.from_toml(grid.to_toml()) == grid  # written and read back
        True
    """

    base: StudySettings
    blocks: tuple[tuple[tuple[str, tuple[Any, ...]], ...], ...]
    confirm_seeds: int = 5
    confirm_first_seed: int = 100
    fitted: tuple[str, ...] = ()
    _cells: tuple[Cell, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in _GRID_KEYS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"grid: {name} = {v!r} must be an integer >= 0")
        held = range(self.confirm_first_seed, self.confirm_first_seed + self.confirm_seeds)
        if self.confirm_seeds and set(held) & set(self.base.seed_list):
            raise ValueError(
                f"grid: the held-out seeds {held.start}..{held.stop - 1} overlap the screen's "
                f"{self.base.first_seed}..{self.base.first_seed + self.base.seeds - 1}; set "
                "confirm_first_seed past them"
            )
        if not self.blocks:
            raise ValueError("grid: the grid names no axis (e.g. [grid] k = [2, 5, 10])")
        object.__setattr__(self, "_cells", self._build_cells())

    @property
    def axes(self) -> list[str]:
        """Every axis some table names, in the order they first appear."""
        return list(dict.fromkeys(a for block in self.blocks for a, _ in block))

    @property
    def cells(self) -> tuple[Cell, ...]:
        """The grid's cells, each once, in table then product order."""
        return self._cells

    def base_value(self, axis: str) -> Any:
        if axis == "k":
            return self.base.k
        if axis in self.base.oracle:
            return self.base.oracle[axis]
        return _oracle_default(axis)

    def _build_cells(self) -> tuple[Cell, ...]:
        axes = self.axes
        seen: dict[tuple, Cell] = {}
        for block in self.blocks:
            names = [a for a, _ in block]
            for combo in itertools.product(*(vals for _, vals in block)):
                given = dict(zip(names, combo, strict=True))
                values = tuple((a, given.get(a, self.base_value(a))) for a in axes)
                key = tuple((a, _value_text(v)) for a, v in values)
                if key in seen:
                    continue
                seen[key] = Cell(values, self._cell_settings(dict(values)))
        return tuple(seen.values())

    def _cell_settings(self, values: dict[str, Any]) -> StudySettings:
        oracle = dict(self.base.oracle)
        for a, v in values.items():
            if a == "k":
                continue
            if v == _oracle_default(a) and a not in self.fitted:
                oracle.pop(a, None)  # the default is not written (TOML has no None)
            else:
                oracle[a] = v
        where = ", ".join(f"{a}={_value_text(v)}" for a, v in values.items())
        try:
            if self.fitted:  # the folder's domains and sizes fitted to this cell's settings
                from fl_oracle.experiments.study.settings import dataset_oracle

                keep = {k: v for k, v in oracle.items() if k not in self.fitted or k in values}
                oracle = dataset_oracle(keep, oracle["dataset"])
            return replace(self.base, k=values.get("k", self.base.k), oracle=oracle)
        except ValueError as exc:
            from fl_oracle.experiments.study.settings import SettingError

            if isinstance(exc, SettingError) and exc.key in values:  # the cell's own value
                raise ValueError(f"grid cell {where}: {exc.why}") from None
            raise ValueError(f"grid cell {where}: {str(exc).removeprefix('study: ')}") from None

    @classmethod
    def from_toml(
        cls,
        text: str,
        *,
        dataset: str | None = None,
        oracle: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> GridSettings:
        """Grid settings from a study TOML with a grid (unknown keys and bad axes in one line);
        ``overrides`` (non-None) replace the base study's settings, as for a study, and
        ``oracle`` its ``[oracle]`` values (a command's federation options).

        ``dataset`` (else the ``[oracle]`` table's own ``dataset``): an image folder. The
        domains, validation size and client sizes the table does not give are the folder's,
        fitted to every cell's own settings (a cell with more clients per domain shares the
        folder among them) and checked against the folder's image counts as the grid is read,
        before any cell runs (:func:`fl_oracle.sim.config.dataset_fields`)."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"study config is not valid TOML: {exc}") from None
        grid = raw.pop("grid", None)
        extra = {k: raw.pop(k) for k in _GRID_KEYS if k in raw}
        tables = grid if isinstance(grid, list) else [grid]
        if not tables or not all(isinstance(t, dict) for t in tables):
            raise ValueError("grid: [grid] must be a table (or [[grid]] tables) of axis = [values]")
        blocks = tuple(_block(t) for t in tables)
        if oracle:
            if "oracle" in raw and not isinstance(raw["oracle"], dict):
                raise ValueError("study config: [oracle] must be a table")
            raw["oracle"] = {**raw.get("oracle", {}), **oracle}
        given = raw.get("oracle", {}) if isinstance(raw.get("oracle", {}), dict) else {}
        if dataset is None and isinstance(given.get("dataset"), str):
            dataset = given["dataset"]
        fitted = ()
        if dataset is not None:
            fitted = tuple(k for k in _FITTED if k not in given)
        base = StudySettings.from_table(raw, dataset=dataset, **overrides)
        return cls(base=base, blocks=blocks, fitted=fitted, **extra)

    def to_toml(self) -> str:
        """The grid as TOML (read back by :meth:`from_toml` to equal settings; the values the
        dataset folder fits per cell are not written: they are fitted again when read)."""
        head = [f"{k} = {toml_value(getattr(self, k))}" for k in _GRID_KEYS]
        tables = []
        for block in self.blocks:
            rows = [
                f"{a} = [{', '.join(toml_value('none' if v is None else v) for v in vals)}]"
                for a, vals in block
            ]
            tables.append("\n".join(["[[grid]]", *rows]))
        base = self.base.to_toml(omit=self.fitted).rstrip("\n")
        return "\n".join([*head, base, "", "\n\n".join(tables)]) + "\n"

    def grown(self, add: Sequence[str]) -> GridSettings:
        """Every cell with the entries of ``add`` it lacks appended."""
        from fl_oracle.experiments.study.runs import grown

        return replace(self, base=grown(self.base, add))


def _axis_value(axis: str, v: Any) -> Any:
    """One value of an axis as the settings hold it: ``"none"`` -> None; sizes as the CLI's
    ``--samples-per-client`` (a number, ``domain=n`` pairs or a table)."""
    if isinstance(v, str) and v.strip().lower() == "none":
        return None
    if axis == "samples_per_client" and isinstance(v, str):
        from fl_oracle.sim.sizes import sizes_from_text

        try:
            return sizes_from_text(v)
        except ValueError as exc:
            raise ValueError(f"grid: samples_per_client: {exc}") from None
    if axis == "k" and (isinstance(v, bool) or not isinstance(v, int)):
        raise ValueError(f"grid: k = {v!r} must be an integer")
    if isinstance(v, list):
        raise ValueError(f"grid: {axis} value {v!r} is a list; an axis lists single values")
    return v


def _block(table: dict) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    known = {"k"} | _oracle_keys()
    out = []
    if not table:
        raise ValueError("grid: a [grid] table names no axis (e.g. k = [2, 5, 10])")
    for axis, vals in table.items():
        if axis not in known:
            from fl_oracle.experiments.study.settings import _did_you_mean

            raise ValueError(
                f"grid: {axis!r} is not an axis (k or an [oracle] setting){_did_you_mean(axis, known)}"
            )
        if not isinstance(vals, list) or not vals:
            raise ValueError(f"grid: {axis} = {vals!r} must be a non-empty list of values")
        parsed = tuple(_axis_value(axis, v) for v in vals)
        if len({_value_text(v) for v in parsed}) != len(parsed):
            raise ValueError(f"grid: {axis} = {vals!r} lists a value twice")
        out.append((axis, parsed))
    return tuple(out)


def confirm_settings(grid: GridSettings, cell: Cell, leaders: Sequence[str]) -> StudySettings:
    """The held-out study of a cell: every counted baseline and the reference against the
    ``leaders``, on the held-out seeds.

    Examples:
        >>> from fl_oracle.experiments.study.grid import GridSettings, confirm_settings
        >>> toml = '''
        ... seeds = 3
        ... k = 2
        ... selectors = ["proportional", "random", "eps-lt:5@probe", "maxmin:2"]
        ... [grid]
        ... k = [2, 3]
        ... '''
        >>> grid = GridSettings.from_toml(toml)
        >>> held = confirm_settings(grid, grid.cells[1], ["maxmin:2"])
        >>> held.selectors, list(held.seed_list), held.k
        (('proportional', 'random', 'maxmin:2'), [100, 101, 102, 103, 104], 3)
    """
    from fl_oracle.experiments.study.settings import is_baseline

    s = cell.settings
    base = [e.text for e in s.entries if is_baseline(e.spec) or e.text == s.reference]
    entries = [*base, *(e for e in leaders if e not in base)]
    return replace(
        s,
        seeds=grid.confirm_seeds,
        first_seed=grid.confirm_first_seed,
        selectors=tuple(entries),
        front_rounds=(),
    )
