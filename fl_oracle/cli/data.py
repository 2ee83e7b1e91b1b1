"""``fedsel data`` commands: ``fedsel data preview`` draws a grid of images per domain.

Thin: parses options, calls :mod:`fl_oracle.sim.data` and :mod:`fl_oracle.sim.data.preview`.
Nothing heavy (torch, numpy, matplotlib) is imported at module level.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["data_app", "register"]

data_app = typer.Typer(
    name="data",
    help="Inspect the Digits-4 data (real files or generated stand-ins).",
    no_args_is_help=True,
    add_completion=False,
)


@data_app.command("preview")
def preview(
    out: Path = typer.Option(
        Path("runs/data-preview.png"), "--out", "-o", help="PNG file to write (folders made)."
    ),
    n: int = typer.Option(10, "--n", min=1, max=50, help="Images per domain."),
    seed: int = typer.Option(0, "--seed", min=0, help="Generator / subsample seed."),
    data_root: Path | None = typer.Option(None, "--data-root", help="Folder with real data."),
    data: str = typer.Option("auto", "--data", help="auto | real | generated."),
    split: str = typer.Option("train", "--split", help="train | test."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Generated-data cache."),
) -> None:
    """Draw one row of images per domain, titled with where each row came from."""
    from fl_oracle.sim.data import DOMAINS, load_domain
    from fl_oracle.sim.data.api import check_real
    from fl_oracle.sim.data.preview import render_preview

    if out.suffix.lower() != ".png":
        raise typer.BadParameter(f"--out {out} must end in .png")
    if data not in ("auto", "real", "generated"):
        raise typer.BadParameter(f"--data {data!r} must be auto, real or generated")
    check_real(DOMAINS, data_root, data, [split])
    from selection.progress import rich_progress

    with rich_progress() as progress:
        rows = [
            load_domain(
                d,
                split,
                root=data_root,
                mode=data,
                n=n,
                seed=seed,
                standardize=False,
                cache_dir=cache_dir,
                progress=progress,
            )
            for d in DOMAINS
        ]
    path = render_preview(rows, out)
    print(f"wrote {path}")


def register(app: typer.Typer) -> None:
    """Add the ``data`` sub-app to the ``fedsel`` app."""
    app.add_typer(data_app, name="data")
