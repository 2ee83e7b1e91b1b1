"""The generic torch.func model path against the built-in CNN path and a per-client loop.

One federation of a generated image-folder dataset (3 domains x 5 clients, 32x32, 7 classes),
the same CNN three ways:

- ``built-in``: the ``cnn`` architecture (flat-vector functions, hand-made stacked path,
  layer-wise per-sample gradients for F);
- ``generic``: the same network as a plain ``nn.Module`` given as ``--model module:factory``
  (``torch.func.vmap`` over the clients' stacked parameters, ``vmap(grad)`` for F);
- ``loop``: what a user would write without fedsel: each client's module trained on its own
  with ``torch.optim.SGD`` (same batches and steps), F from one backward per probe sample.

Per phase (local training of all 15 clients, F on their probe sets) the median of ``--repeats``
runs on one torch thread; ratios come from one run. Writes ``results/benchmarks/generic_model.{csv,md}``.

    .venv/bin/python benchmarks/generic_model.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fl_oracle.sim.config import OracleConfig
from fl_oracle.sim.data.shapes import write_shapes
from fl_oracle.sim.local import SampleStream, plan_steps
from fl_oracle.sim.model import unflatten
from fl_oracle.sim.oracle import Oracle

ROOT = Path(__file__).resolve().parents[1]


class DigitCNN(nn.Module):
    """The built-in ``cnn`` as a plain module (same parameter names and order)."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(in_channels, 16, 3, padding=1)
        self.conv1 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc0 = nn.Linear(32 * 4 * 4, 64)
        self.fc1 = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.avg_pool2d(x, 2)
        x = torch.relu(nn.functional.max_pool2d(self.conv0(x), 2))
        x = torch.relu(nn.functional.max_pool2d(self.conv1(x), 2))
        return self.fc1(torch.relu(self.fc0(x.flatten(1))))


def make_cnn(num_classes: int, in_channels: int) -> nn.Module:
    return DigitCNN(num_classes, in_channels)


def _oracle_phases(cfg: OracleConfig, w0: torch.Tensor | None) -> tuple[dict, torch.Tensor]:
    o = Oracle(cfg)
    if w0 is not None:
        o._w = w0.clone()
    o._ensure_updates(list(range(len(o.clients))))
    return {"local": o.timings["local"], "fisher": o.timings["fisher"]}, o._w


def _loop_phases(cfg: OracleConfig, w0: torch.Tensor) -> dict:
    """Each client trained alone with torch.optim.SGD; F by one backward per probe sample."""
    o = Oracle(cfg.replace(model="__main__:make_cnn"))
    fed = o._fed
    arch = o.arch
    template = make_cnn(fed.n_classes, fed.image_shape[0])

    def module_at(w: torch.Tensor) -> nn.Module:
        m = make_cnn(fed.n_classes, fed.image_shape[0])
        with torch.no_grad():
            for (_, p), v in zip(m.named_parameters(), unflatten(arch, w).values(), strict=True):
                p.copy_(v)
        return m

    del template
    t0 = time.perf_counter()
    for i in range(len(fed.client_ids)):  # F: one backward per probe sample
        m = module_at(w0)
        x, y = o._xs[i][fed.probe[i]], fed.ys[i][fed.probe[i]]
        for n in range(len(y)):
            m.zero_grad()
            torch.log_softmax(m(x[n : n + 1]), -1)[0, y[n]].backward()
    fisher = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(len(fed.client_ids)):
        m = module_at(w0)
        opt = torch.optim.SGD(m.parameters(), lr=cfg.lr)
        n = len(fed.ys[i])
        b, steps = plan_steps(n, cfg.batch_size, cfg.budget(fed.client_ids[i]))
        stream = SampleStream(n, o._stream_seed(i), w0.device)
        for _ in range(steps):
            idx = stream.take(b)
            opt.zero_grad()
            nn.functional.cross_entropy(m(o._xs[i][idx]), fed.ys[i][idx]).backward()
            opt.step()
    return {"local": time.perf_counter() - t0, "fisher": fisher}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        root = write_shapes(Path(tmp) / "shapes", per_class=args.per_class, size=32)
        cfg = OracleConfig.for_dataset(root, clients_per_domain=5, threads=1, local_holdout=0)
        rows = []
        for r in range(args.repeats):
            built, w0 = _oracle_phases(cfg, None)
            gen, _ = _oracle_phases(cfg.replace(model="__main__:make_cnn"), w0)
            loop = _loop_phases(cfg, w0)
            for path, ph in (("built-in", built), ("generic", gen), ("loop", loop)):
                rows.append({"repeat": r, "path": path, **ph})
            print(f"repeat {r + 1}/{args.repeats}", file=sys.stderr)
    df = pd.DataFrame(rows)
    med = df.groupby("path")[["local", "fisher"]].median()
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "generic_model.csv", index=False)
    n_clients = len(cfg.client_ids)
    lines = [
        "# Generic torch.func model path vs the built-in CNN path vs a per-client loop",
        "",
        f"`.venv/bin/python benchmarks/generic_model.py --repeats {args.repeats}` — {n_clients} "
        f"clients ({', '.join(cfg.domains)}; {sum(cfg.samples_per_client.values()) // 3} "
        "samples each), 32x32, 7 classes, the same CNN, 1 local epoch, one torch thread; "
        f"median of {args.repeats} runs in seconds, ratios to the built-in path from the same run.",
        "",
        "| path | local training (s) | × built-in | F on the probe sets (s) | × built-in |",
        "|---|---:|---:|---:|---:|",
    ]
    b = med.loc["built-in"]
    for path in ("built-in", "generic", "loop"):
        m = med.loc[path]
        lines.append(
            f"| {path} | {m['local']:.3f} | {m['local'] / b['local']:.2f} | "
            f"{m['fisher']:.3f} | {m['fisher'] / b['fisher']:.2f} |"
        )
    (args.out / "generic_model.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
