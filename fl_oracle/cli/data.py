"""``fedsel data`` commands: ``fedsel data preview`` draws a grid of images per domain.

Thin: parses options, calls :mod:`fl_oracle.sim.data` and :mod:`fl_oracle.sim.data.preview`.
Nothing heavy (torch, numpy, matplotlib) is imported at module level.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from fl_oracle.cli.options import federation_options

__all__ = ["data_app", "register"]

data_app = typer.Typer(
    name="data",
    help="Inspect the Digits-4 data; write a generated image-folder dataset.",
    no_args_is_help=True,
    add_completion=False,
)


@data_app.command("preview")
@federation_options("data_root", "data")
def preview(
    out: Path = typer.Option(
        Path("runs/data-preview.png"), "--out", "-o", help="PNG file to write (folders made)."
    ),
    n: int = typer.Option(10, "--n", min=1, max=50, help="Images per domain."),
    seed: int = typer.Option(0, "--seed", min=0, help="Generator / subsample seed."),
    federation: dict[str, Any] | None = None,
    split: str = typer.Option("train", "--split", help="train | test."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Generated-data cache."),
) -> None:
    """Draw one row of images per domain, titled with where each row came from."""
    from fl_oracle.sim.data import DOMAINS, load_domain
    from fl_oracle.sim.data.api import check_real
    from fl_oracle.sim.data.preview import render_preview

    if out.suffix.lower() != ".png":
        raise typer.BadParameter(f"--out {out} must end in .png")
    data_root, data = federation.get("data_root"), federation.get("data_mode", "auto")
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
    print(f"wrote {path}", file=sys.stderr)


@data_app.command("shapes")
def shapes(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write DIR/<domain>/<class>/."),
    per_class: int = typer.Option(60, "--per-class", min=2, help="Images per domain and class."),
    size: int = typer.Option(64, "--size", min=8, max=512, help="Side of the square images."),
    seed: int = typer.Option(0, "--seed", min=0, help="Generator seed."),
) -> None:
    """Write a generated 3-domain, 7-class image-folder dataset (cartoon, photo, sketch)
    to read with --dataset."""
    from fl_oracle.sim.data.shapes import CLASSES, DOMAINS, write_shapes

    if out.exists() and any(out.iterdir()):
        raise typer.BadParameter(f"{out} exists and is not empty", param_hint="--out")
    tmp = out.with_name(out.name + ".partial")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    write_shapes(tmp, per_class=per_class, size=size, seed=seed)
    if out.exists():
        out.rmdir()
    tmp.rename(out)
    n = per_class * len(CLASSES)
    print(
        f"wrote {len(DOMAINS)} domains x {len(CLASSES)} classes x {per_class} images "
        f"({n} per domain, {size}x{size}) to {out}",
        file=sys.stderr,
    )


def register(app: typer.Typer) -> None:
    """Add the ``data`` sub-app to the ``fedsel`` app."""
    app.add_typer(data_app, name="data")
