"""A pure-numpy stand-in for :class:`fl_oracle.sim.oracle.Oracle` with the same methods.

The "model" is a vector of per-domain accuracies s (%, shape (D,)). Client i's update moves it
by Δ_i = affinity[d_i] * quality_i * (100 - s) * 0.3 + noise(seed, round, i); statistics follow
the round-stats contract. It records which clients every ``round_stats`` call measured.
Imported as ``helpers.fake_oracle``. ``tiny_data`` and ``tiny_overrides`` describe a tiny
federation for the real oracle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

DOMAINS = ("mnist", "usps", "svhn", "syn")
_AFF = np.array(
    [[1.0, 0.7, 0.15, 0.35], [0.75, 1.0, 0.12, 0.3], [0.3, 0.25, 1.0, 0.7], [0.4, 0.35, 0.6, 1.0]]
)
_SIZES = {"mnist": 600, "usps": 72, "svhn": 732, "syn": 100}


class FakeOracle:
    """Deterministic fake oracle: ``clients_per_domain`` clients in each of the four domains."""

    def __init__(self, seed: int = 0, clients_per_domain: int = 2) -> None:
        self.seed = int(seed)
        self.domains = list(DOMAINS)
        rng = np.random.default_rng(self.seed)
        rows = []
        for j in range(clients_per_domain):
            for d in self.domains:
                rows.append({"client_id": f"{d}-{j}", "domain": d, "n_samples": _SIZES[d] + j})
        self.clients = pd.DataFrame(rows)
        self.sources = {d: "generated stand-in" for d in self.domains}
        n = len(rows)
        self._dom = np.array([self.domains.index(r["domain"]) for r in rows])
        self._quality = rng.uniform(0.2, 1.0, n)
        self._B = rng.uniform(0.01, 0.3, n)
        self._s = np.array([40.0, 35.0, 15.0, 20.0])
        self.round = 0
        self.measured: list[list[str]] = []
        self.steps: list[tuple[list[str], dict | None]] = []

    def _delta(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.round])
        noise = rng.normal(0.0, 1.0, (len(self._dom), len(self.domains)))
        return _AFF[self._dom] * self._quality[:, None] * (100.0 - self._s)[None, :] * 0.3 + noise

    def _ids(self, clients: Sequence[str] | None) -> list[int]:
        ids = list(self.clients["client_id"])
        if clients is None:
            return list(range(len(ids)))
        return [ids.index(c) for c in clients]

    def round_stats(self, clients: Sequence[str] | None = None, *, local=True) -> pd.DataFrame:
        idx = self._ids(clients)
        delta = self._delta()
        n = self.clients["n_samples"].to_numpy(dtype=float)
        mean = (delta * n[:, None]).sum(0) / n.sum()
        self.measured.append([self.clients["client_id"].iloc[i] for i in idx])
        rows = []
        for i in idx:
            Ud = np.clip(self._s + delta[i], 0.0, 100.0)
            cos = float(delta[i] @ mean / (np.linalg.norm(delta[i]) * np.linalg.norm(mean)))
            row = {
                "round": self.round,
                "client_id": self.clients["client_id"].iloc[i],
                "domain": self.clients["domain"].iloc[i],
                "n_samples": int(n[i]),
                "U": float(Ud.mean()),
                "F": float(np.exp(3.0 - self._quality[i] + 0.1 * self.round)),
                "B": float(self._B[i]),
                "cos_g": float(np.clip(cos, -1.0, 1.0)),
                "loss": float(2.3 * (1.0 - self._s[self._dom[i]] / 100.0) + 0.05),
            }
            row.update({f"U_{d}": float(v) for d, v in zip(self.domains, Ud, strict=True)})
            rows.append(row)
        return pd.DataFrame(rows)

    def _aggregate(self, selection: Sequence[str], weights: Mapping[str, float] | None):
        idx = self._ids(selection)
        if weights is None:
            w = self.clients["n_samples"].to_numpy(dtype=float)[idx]
        else:
            w = np.array([weights[c] for c in selection], dtype=float)
        w = w / w.sum()
        return np.clip(self._s + w @ self._delta()[idx], 0.0, 100.0)

    @staticmethod
    def _metrics(s: np.ndarray, domains: Sequence[str]) -> dict:
        out = {f"acc_{d}": float(v) for d, v in zip(domains, s, strict=True)}
        out.update(acc_pooled=float(s.mean()), acc_avg=float(s.mean()), acc_worst=float(s.min()))
        return out

    def evaluate(self, selection, *, weights=None, split="test") -> dict:
        if split not in ("val", "test"):
            raise ValueError(f"split {split!r}")
        return self._metrics(self._aggregate(selection, weights), self.domains)

    def step(self, selection, *, weights=None, global_stats=True) -> dict:
        self.steps.append((list(selection), None if weights is None else dict(weights)))
        self._s = self._aggregate(selection, weights)
        self.round += 1
        return {
            **self._metrics(self._s, self.domains),
            **({"global_loss": 1.0} if global_stats else {}),
        }

    def test_accuracy(self) -> dict:
        return self._metrics(self._s, self.domains)

    def state_dict(self) -> dict:
        return {"s": self._s.copy(), "round": self.round}

    def load_state_dict(self, d: dict) -> None:
        self._s = np.array(d["s"], dtype=float)
        self.round = int(d["round"])


# ---------------------------------------------------------------- a tiny real federation
def tiny_data(seed: int = 0) -> dict:
    """Learnable random 32x32 images for the real oracle: one pattern per (domain, class)."""
    import torch

    from fl_oracle.sim.data.base import DomainData

    rng = np.random.default_rng(seed)
    out = {}
    for j, d in enumerate(DOMAINS):
        proto = rng.normal(0, 1, (10, 3, 32, 32)).astype(np.float32)
        out[d] = {}
        for split, n in (("train", 80), ("test", 24)):
            y = rng.integers(0, 10, n)
            x = proto[y] * (0.5 + 0.2 * j) + rng.normal(0, 1, (n, 3, 32, 32))
            out[d][split] = DomainData(
                d, split, torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y), "generated"
            )
    return out


def tiny_overrides() -> dict:
    """OracleConfig fields (besides seed) of the tiny federation: 2 clients per domain."""
    return dict(
        clients_per_domain=2,
        samples_per_client={"mnist": 16, "usps": 6, "svhn": 16, "syn": 8},
        val_per_domain=20,
        model="cnn-small",
        batch_size=8,
        fisher_samples=6,
        device="cpu",
        threads=1,  # tiny tensors: thread hand-offs cost more than they save on busy cores
    )
