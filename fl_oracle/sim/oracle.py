"""The federated Digits-4 oracle: measure every client at w_t, evaluate or commit a selection.

Usage::

    oracle = Oracle(OracleConfig(seed=0))
    stats = oracle.round_stats()          # one row per client at w_t (round-stats contract)
    oracle.evaluate(["svhn-0", "usps-2"])  # realized accuracy of that aggregate, no commit
    oracle.step(["svhn-0", "usps-2"])      # commit it: w_{t+1}, round t+1

Randomness is a pure function of (seed, round, client): the partition and probe sets of
``config.seed``, the initial model of ``config.seed`` and each client's mini-batch stream of
``(seed, round, client)``. A state dict (model, round, mu state) therefore resumes exactly.

Why one module past 450 lines: :class:`Oracle` is one object whose methods (measure, probe,
evaluate, commit, checkpoint) all read and write the same federation state (w_t, the round,
the client images, probe sets, the measured updates and their logits, the bit-for-bit
invariants the tests hold); the computations it delegates live beside it (local training in
:mod:`.local`, statistics in :mod:`.stats`, models in :mod:`.model`, client data in
:mod:`.store`, loading the federation's data in :mod:`.loading`, accuracies from hits in
:mod:`.utilities`, the device, threads and seed streams in :mod:`.runtime`). Splitting the
class would spread that state, not a concept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from fl_oracle.errors import CheckpointError, OracleError, UnknownClientError
from fl_oracle.sim.config import OracleConfig, small_config
from fl_oracle.sim.decoded import DecodedCache
from fl_oracle.sim.loading import load_federation_data
from fl_oracle.sim.local import MODEL_CHUNK, plan_steps, train_clients
from fl_oracle.sim.model import forward_stacked, init_params, prepool, resolve_model, unflatten
from fl_oracle.sim.partition import build_federation
from fl_oracle.sim.runtime import resolve_device, set_threads, stream_seed
from fl_oracle.sim.stats import (
    ProbeStats,
    b_dissimilarity,
    correct_stacked,
    cosine_to,
    js_divergence,
    logits_stacked,
    probe_stats,
    probe_stats_vmap,
    segment_grads,
)
from fl_oracle.sim.store import ClientImages, Paired
from fl_oracle.sim.utilities import accuracy_metrics, candidate_utilities
from selection.baselines.reads import VectorSource
from selection.logits import ValidationLogits
from selection.progress import ProgressFn
from selection.schema import F_FLOOR, validate_stats

# resolve_device and load_federation_data: re-exported, where callers have imported them
__all__ = ["Oracle", "small_oracle", "resolve_device", "load_federation_data"]

STATE_FORMAT = "fedsel-oracle-1"


def _decoded(images: ClientImages) -> DecodedCache:
    """Compact client images kept decoded for reuse (:mod:`fl_oracle.sim.decoded`); nothing
    kept when the blocks live in a file."""
    return DecodedCache(images, budget=0 if images.blocks.on_disk else None)


class Oracle:
    """A federated simulator that reports client statistics and realized accuracies.

    Attributes:
        config: the configuration.
        round: t, the round of the current global model w_t.
        domains: domain names.
        clients: DataFrame ``client_id, domain, n_samples``.
        sources: domain -> ``"real"`` / ``"genuine, bundled"`` / ``"generated stand-in"``.
        provenance: ``{domain: {split: record}}`` (:mod:`fl_oracle.sim.data.provenance`).

    Examples:
        A tiny federation (2 domains x 2 clients of 8 generated images, one local step each):
        measure every client at w_0, evaluate a selection, then commit it:

        >>> import tempfile
        >>> from fl_oracle.sim.config import small_config
        >>> from fl_oracle.sim.oracle import Oracle
        >>> config = small_config()
        >>> with tempfile.TemporaryDirectory() as cache:  # generated stand-ins, not kept
        ...     oracle = Oracle(config, cache_dir=cache)
        >>> oracle.clients.values.tolist()
        [['svhn-0', 'svhn', 8], ['svhn-1', 'svhn', 8], ['syn-0', 'syn', 8], ['syn-1', 'syn', 8]]
        >>> stats = oracle.round_stats()
        >>> stats.shape[0], stats["steps"].tolist(), bool(stats["loss"].between(2.2, 2.4).all())
        (4, [1, 1, 1, 1], True)
        >>> before = oracle.evaluate(["svhn-0", "syn-1"])  # test accuracy, not committed
        >>> oracle.round
        0
        >>> after = oracle.step(["svhn-0", "syn-1"])  # commit: w_1, round 1
        >>> after["round"], oracle.round, all(after[key] == v for key, v in before.items())
        (1, 1, True)
    """

    def __init__(
        self,
        config: OracleConfig,
        *,
        data: dict | None = None,
        cache_dir=None,
        progress: ProgressFn | None = None,
    ) -> None:
        if not isinstance(config, OracleConfig):
            raise OracleError(f"config must be an OracleConfig, got {type(config).__name__}")
        self.config = config
        self.device = resolve_device(config.device)
        if config.threads is not None:
            set_threads(config.threads)
        if data is None:
            data = load_federation_data(config, cache_dir=cache_dir, progress=progress)
        self._fed = build_federation(config, data, self.device)
        fed = self._fed
        self.arch = resolve_model(
            config.model, n_classes=fed.n_classes, image_shape=fed.image_shape
        )
        self.domains = fed.domains
        self.sources = dict(fed.sources)
        from fl_oracle.sim.data.provenance import data_provenance

        hollow = getattr(data, "hollow", None)  # a DomainStream keeps the records, not pixels
        self.provenance = data_provenance(
            {d: (hollow(d) if hollow else data[d]) for d in fed.domains}
        )
        # clients sharing a small split (the bundled genuine MNIST): said in the record
        self.shared = dict(fed.shared)
        for d, note in self.shared.items():
            self.provenance[d]["train"]["shared"] = note
        self.clients = pd.DataFrame(
            {
                "client_id": list(fed.client_ids),
                "domain": list(fed.client_domain),
                "n_samples": fed.n_samples.astype(np.int64),
            }
        )
        self._index = {cid: i for i, cid in enumerate(fed.client_ids)}
        # every image set pooled once by the model's input pooling (``prepool``): the
        # passes below see these same images every round, and pooling first gives bitwise
        # the same results as pooling on every pass
        pooled = lambda x: prepool(self.arch, x)  # noqa: E731
        # compact client images (a ClientImages sequence) are decoded and pooled on use;
        # float ones (an image-folder dataset) are pooled once here
        # (kept decoded while they fit the process's budget, unless the blocks went to a
        # file: a federation too large to hold compactly is not held decoded either)
        if isinstance(fed.xs, ClientImages):
            self._xs = _decoded(fed.xs.mapped(pooled))
        else:
            self._xs = [pooled(x) for x in fed.xs]
        self._sets = {
            "val": {d: (pooled(x), y) for d, (x, y) in fed.val.items()},
            "test": {d: (pooled(x), y) for d, (x, y) in fed.test.items()},
        }
        if isinstance(fed.local, Paired):
            self._local_x = _decoded(fed.local.xs.mapped(pooled))
            self._local_y = list(fed.local.ys)
        else:
            self._local_x = [pooled(x) for x, _ in fed.local]
            self._local_y = [y for _, y in fed.local]
        glob = fed.hist.sum(0)
        self._B = np.array([js_divergence(h, glob) for h in fed.hist])
        self._probe_x = torch.cat([x[p] for x, p in zip(self._xs, fed.probe, strict=True)])
        self._probe_y = torch.cat([y[p] for y, p in zip(fed.ys, fed.probe, strict=True)])
        self._probe_seg = torch.cat(
            [
                torch.full((len(p),), i, dtype=torch.int64, device=self.device)
                for i, p in enumerate(fed.probe)
            ]
        )
        self._w = init_params(self.arch, torch.Generator().manual_seed(config.seed)).to(self.device)
        self.round = 0
        self._mu = config.mu
        self._drops = 0
        self._updates: dict[int, tuple[torch.Tensor, int, float]] = {}
        #: client -> its last committed update Δ_i: what a server keeps of the clients it
        #: aggregated (the stale update vectors rules such as DivFL and clustered:2 read),
        #: kept only where a run asks (``keep_committed``: N model-sized vectors at most)
        self._committed: dict[int, torch.Tensor] = {}
        self.keep_committed = False
        #: client -> minus its probe-batch gradient at the model it last received (DivFL's
        #: partial gradients): every client's at the first ``update_vectors("partial")``, then
        #: kept up to date at each step for the committed clients once that call was made
        self._partial: dict[int, torch.Tensor] = {}
        self._logits: dict[int, np.ndarray] = {}  # client -> (S, C) float16 val logits at w_t
        self._probe: ProbeStats | None = None
        self._val_grad: torch.Tensor | None = None  # (D, P) grad L_d(w_t) on validation
        self._base_hits: tuple[np.ndarray, np.ndarray] | None = None  # w_t on validation
        #: seconds spent per phase since construction: fisher, local, eval, test
        self.timings: dict[str, float] = {"fisher": 0.0, "local": 0.0, "eval": 0.0, "test": 0.0}

    # ------------------------------------------------------------------ selection helpers
    def _resolve(self, clients: Sequence[str] | None, what: str = "clients") -> list[int]:
        if clients is None:
            return list(range(len(self._index)))
        if isinstance(clients, str):
            clients = [clients]
        out, seen = [], set()
        for cid in clients:
            if cid not in self._index:
                raise UnknownClientError(f"{what}: client id {cid!r} is not in the federation")
            if cid in seen:
                raise OracleError(f"{what}: client id {cid!r} is listed twice")
            seen.add(cid)
            out.append(self._index[cid])
        if not out:
            raise OracleError(f"{what}: the selection is empty")
        return out

    def _weights(self, idx: list[int], weights: Mapping[str, float] | None) -> torch.Tensor:
        ids = self._fed.client_ids
        if weights is None:
            if self.config.aggregation == "uniform":
                w = np.ones(len(idx))
            else:
                w = self._fed.n_samples[idx].astype(np.float64)
        else:
            extra = set(weights) - {ids[i] for i in idx}
            if extra:
                raise OracleError(
                    f"weights: client id {sorted(extra)[0]!r} is not in the selection"
                )
            w = np.array([float(weights.get(ids[i], 0.0)) for i in idx])
            bad = ~np.isfinite(w) | (w < 0)
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise OracleError(f"weights: client {ids[idx[j]]!r} has weight {w[j]!r}; need >= 0")
            if w.sum() <= 0:
                raise OracleError("weights: the selected clients' weights sum to 0")
        return torch.as_tensor(w / w.sum(), dtype=torch.float32, device=self.device)

    # ------------------------------------------------------------------ cached computations
    def _clear_round(self) -> None:
        """Forget what was computed at the current w_t (a new model: a step or a restore)."""
        self._updates.clear()
        self._logits.clear()
        self._probe = None
        self._val_grad = None
        self._base_hits = None

    @property
    def _probe_method(self) -> Callable[..., ProbeStats]:
        """The per-sample gradient pass of the configuration's ``fisher_method``."""
        return probe_stats if self.config.fisher_method == "layerwise" else probe_stats_vmap

    def _probe_stats(self) -> ProbeStats:
        if self._probe is None:
            t0 = time.perf_counter()
            self._probe = self._probe_method(
                self.arch, self._w, self._probe_x, self._probe_y, self._probe_seg, len(self._index)
            )
            self.timings["fisher"] += time.perf_counter() - t0
        return self._probe

    def _ensure_updates(self, idx: list[int], callback: Callable[[int, int], None] | None = None):
        missing = [i for i in idx if i not in self._updates]
        if not missing:
            return
        fed, cfg = self._fed, self.config
        g0 = self._probe_norms(missing)
        t0 = time.perf_counter()
        self._updates.update(
            train_clients(
                self.arch,
                self._w,
                missing,
                xs=self._xs,
                ys=fed.ys,
                probes=fed.probe,
                budgets=[cfg.budget(fed.client_ids[i]) for i in range(len(fed.client_ids))],
                seeds=[self._stream_seed(i) for i in range(len(fed.client_ids))],
                batch_size=cfg.batch_size,
                lr=cfg.lr,
                mu=self._mu,
                gamma=cfg.gamma,
                g0_norm=g0,
                callback=callback,
            )
        )
        self.timings["local"] += time.perf_counter() - t0

    def _probe_norms(self, idx: list[int]) -> torch.Tensor:
        """(N,) ||grad F_k(w_t)|| on the probe sets, exact for the clients ``idx``.

        From the round's probe pass when it ran (or γ-inexact stops need it); otherwise from
        a pass over these clients' probe batches alone (zero for the others): a round that
        trains K clients and reads no probe pass (a rule reading only sizes) does not probe
        all N for the ``gamma_achieved`` it reports."""
        if self._probe is not None or self.config.gamma > 0:
            return self._probe_stats().grad.norm(dim=1)
        picks, grad = self._probe_part(idx)
        g0 = torch.zeros(len(self._index), dtype=grad.dtype, device=grad.device)
        g0[picks.to(g0.device)] = grad.norm(dim=1)
        return g0

    def _probe_part(self, idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(sorted ``idx``, their (len(idx), P) mean probe-batch gradients at w_t): from the
        round's probe pass where it ran, else from a pass over these clients' batches alone."""
        picks = torch.as_tensor(sorted(idx), device=self._probe_seg.device)
        if self._probe is not None:
            return picks, self._probe.grad[picks.to(self._probe.grad.device)]
        t0 = time.perf_counter()
        rows = torch.isin(self._probe_seg, picks)
        seg = torch.searchsorted(picks, self._probe_seg[rows])
        part = self._probe_method(
            self.arch, self._w, self._probe_x[rows], self._probe_y[rows], seg, len(idx)
        )
        self.timings["fisher"] += time.perf_counter() - t0
        return picks, part.grad

    def _stream_seed(self, i: int) -> int:
        return stream_seed(self.config.seed, self.round, i)

    def _accuracies(
        self, W: torch.Tensor, split: str, logits: list | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(M, D) correct counts and (D,) sizes of models W (M, P) on a split.

        With ``logits`` (a list) the models' logits per domain, (M, S_d, C) float16 numpy,
        are appended to it (the hits are counted from the same float32 logits)."""
        t0 = time.perf_counter()
        sets = self._sets[split]
        hits = []
        for d in self.domains:
            parts, parts_z = [], []
            for m0 in range(0, len(W), MODEL_CHUNK):  # bounded activations on a GPU
                Wm = W[m0 : m0 + MODEL_CHUNK]
                if logits is None:
                    parts.append(correct_stacked(self.arch, Wm, *sets[d]).cpu().numpy())
                    continue
                z = logits_stacked(self.arch, Wm, sets[d][0])
                parts.append((z.argmax(-1) == sets[d][1]).sum(1).cpu().numpy())
                parts_z.append(z.to(torch.float16).cpu().numpy())
            hits.append(np.concatenate(parts))
            if logits is not None:
                logits.append(np.concatenate(parts_z))
        self.timings["eval" if split == "val" else "test"] += time.perf_counter() - t0
        return np.stack(hits, axis=1), np.array([len(sets[d][1]) for d in self.domains])

    def _base_accuracies(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_accuracies` of w_t itself on validation, computed once per round (the
        statistics and the probe table both read it)."""
        if self._base_hits is None:
            self._base_hits = self._accuracies(self._w.unsqueeze(0), "val")
        return self._base_hits

    def _local_accuracy(self, idx: list[int], D: torch.Tensor) -> np.ndarray | None:
        """Accuracy (%) of w_t + Δ_i on client i's local hold-out; None if one has none.

        Hold-outs of one size (the default: ``config.local_holdout`` each) are evaluated in
        stacked passes of up to ``MODEL_CHUNK`` candidate models on their own inputs,
        otherwise one by one."""
        ys = self._local_y
        if not ys or any(len(ys[i]) == 0 for i in idx):
            return None
        t0 = time.perf_counter()
        W = self._w.unsqueeze(0) + D
        out = np.empty(len(idx))
        if len({len(ys[i]) for i in idx}) == 1:
            for r0 in range(0, len(idx), MODEL_CHUNK):  # memory bounded by the chunk
                part = idx[r0 : r0 + MODEL_CHUNK]
                x = torch.stack([self._local_x[i] for i in part])
                y = torch.stack([ys[i] for i in part])
                with torch.no_grad():
                    logits = forward_stacked(
                        self.arch, unflatten(self.arch, W[r0 : r0 + MODEL_CHUNK]), x
                    )
                out[r0 : r0 + len(part)] = (
                    100.0 * (logits.argmax(-1) == y).sum(1).cpu().numpy() / y.shape[1]
                )
        else:
            for r, i in enumerate(idx):
                hits = correct_stacked(self.arch, W[r : r + 1], self._local_x[i], ys[i])
                out[r] = 100.0 * float(hits[0]) / len(ys[i])
        self.timings["eval"] += time.perf_counter() - t0
        return out

    def _metrics(self, w: torch.Tensor, split: str) -> dict[str, float]:
        if split not in ("val", "test"):
            raise OracleError(f"split={split!r} must be 'val' or 'test'")
        hits, sizes = self._accuracies(w.unsqueeze(0), split)
        return accuracy_metrics(hits[0], sizes, self.domains)

    def _aggregate(self, selection: Sequence[str], weights) -> torch.Tensor:
        idx = self._resolve(selection, "selection")
        alpha = self._weights(idx, weights)
        self._ensure_updates(idx)
        D = torch.stack([self._updates[i][0] for i in idx])
        return self._w + (alpha.unsqueeze(1) * D).sum(0)

    # ------------------------------------------------------------------ public API
    def round_stats(
        self,
        clients: Sequence[str] | None = None,
        *,
        callback: Callable[[int, int], None] | None = None,
        local: bool = True,
    ) -> pd.DataFrame:
        """Statistics of the given clients (default all) at w_t, one row each.

        Columns: ``round, client_id, domain, n_samples, U, U_<domain>..., U_own, U_local, dU,
        F, B, cos_g, loss, steps, gamma_achieved`` (U in %, B in nats). ``cos_g`` is taken
        against the sample-weighted mean update of the clients of this call. Updates are
        cached for :meth:`evaluate` and :meth:`step` of this round.

        Readings of the update utility (all accuracies in %, of the candidate model
        w_t + Δ_i):

        * ``U``: on the pooled validation subsets of all domains (the contract's U).
        * ``U_<domain>``: on one domain's validation subset.
        * ``U_own``: on the client's own domain's validation subset (= ``U_<its domain>``).
        * ``U_local``: on the client's local hold-out (``config.local_holdout`` unused samples
          of its domain with its own class mix); absent when some client has no hold-out.
        * ``dU``: ``U`` minus the pooled validation accuracy of w_t itself (the improvement
          the update brings; in [-100, 100]).

        Args:
            clients: client ids; None = every client.
            callback: ``callback(done, total)`` over client-steps of local training (progress).
            local: measure ``U_local`` (a forward pass of each candidate over its client's
                hold-out); False leaves the column out, as when clients have no hold-out.
        """
        idx = self._resolve(clients)
        fed = self._fed
        probe = self._probe_stats()
        self._ensure_updates(idx, callback)
        D = torch.stack([self._updates[i][0] for i in idx])
        z: list[np.ndarray] = []
        hits, sizes = self._accuracies(self._w.unsqueeze(0) + D, "val", logits=z)
        zz = np.concatenate(z, axis=1)  # (M, S, C): the domains' samples one after another
        self._logits.update({i: zz[r] for r, i in enumerate(idx)})
        hits0, _ = self._base_accuracies()
        util = candidate_utilities(hits, sizes, hits0[0], self.domains)
        U = util["U"]
        Ud = np.stack([util[f"U_{d}"] for d in self.domains], axis=1)
        n = torch.as_tensor(fed.n_samples[idx], dtype=torch.float32, device=self.device)
        cos = cosine_to(D, (n.unsqueeze(1) * D).sum(0) / n.sum()).cpu().numpy()
        rows = {
            "round": np.full(len(idx), self.round, dtype=np.int64),
            "client_id": [fed.client_ids[i] for i in idx],
            "domain": [fed.client_domain[i] for i in idx],
            "n_samples": fed.n_samples[idx].astype(np.int64),
            "U": U,
        }
        for j, d in enumerate(self.domains):
            rows[f"U_{d}"] = Ud[:, j]
        own = [self.domains.index(fed.client_domain[i]) for i in idx]
        rows["U_own"] = Ud[np.arange(len(idx)), own]
        held = self._local_accuracy(idx, D) if local else None
        if held is not None:
            rows["U_local"] = held
        rows["dU"] = util["dU"]
        rows["F"] = np.maximum(probe.fisher[idx].cpu().numpy(), F_FLOOR)
        rows["B"] = self._B[idx]
        rows["cos_g"] = cos
        rows["loss"] = probe.loss[idx].cpu().numpy()
        rows["steps"] = np.array([self._updates[i][1] for i in idx], dtype=np.int64)
        rows["gamma_achieved"] = np.array([self._updates[i][2] for i in idx])
        return validate_stats(pd.DataFrame(rows), domains=self.domains)  # subsets keep all D

    def probe_table(self) -> tuple[pd.DataFrame, dict[str, float], dict[str, int]]:
        """What every client computes at w_t without training, and what the server knows.

        The probe pass of every client (its probe batch, forward and backward: the same pass
        that gives F) plus the first-order per-domain utilities: with g_d = grad L_d(w_t) on
        the server's validation samples of domain d (one pass of the server's own),
        ``x_<d>`` = lr · steps_i · <grad L_i(w_t), g_d>, the first-order decrease of L_d
        (nats) that client i's planned local steps would bring. Trains nothing.

        Returns:
            The table (``client_id, domain, n_samples, loss, F, B, cos_g, steps, x_<d>``:
            cos_g is the cosine of grad L_i with the domains' summed validation gradients),
            the validation accuracy (%) of w_t per domain and the validation sizes.
        """
        fed, cfg = self._fed, self.config
        probe = self._probe_stats()
        if self._val_grad is None:
            t0 = time.perf_counter()
            val = self._sets["val"]
            x = torch.cat([val[d][0] for d in self.domains])
            y = torch.cat([val[d][1] for d in self.domains])
            seg = torch.cat(
                [
                    torch.full((len(val[d][1]),), j, dtype=torch.int64, device=self.device)
                    for j, d in enumerate(self.domains)
                ]
            )
            # the domains' mean gradients alone (no Fisher trace): ordinary backward passes
            self._val_grad = segment_grads(self.arch, self._w, x, y, seg, len(self.domains)).grad
            self.timings["fisher"] += time.perf_counter() - t0
        ids = list(fed.client_ids)
        steps = np.array(
            [
                plan_steps(int(n), cfg.batch_size, cfg.budget(c))[1]
                for c, n in zip(ids, fed.n_samples, strict=True)
            ]
        )
        dots = (probe.grad @ self._val_grad.T).double().cpu().numpy()  # (N, D)
        x = cfg.lr * steps[:, None] * dots
        # the cosine a node can compute itself from what the probe message carries: with the
        # domains' summed validation gradient (Flower's probe phase computes the same)
        cos = cosine_to(probe.grad, self._val_grad.sum(0))
        table = pd.DataFrame(
            {
                "client_id": ids,
                "domain": list(fed.client_domain),
                "n_samples": fed.n_samples.astype(np.int64),
                "loss": probe.loss.cpu().numpy(),
                "F": np.maximum(probe.fisher.cpu().numpy(), F_FLOOR),
                "B": self._B,
                "cos_g": cos.cpu().numpy(),
                "steps": steps.astype(np.int64),
            }
        )
        for j, d in enumerate(self.domains):
            table[f"x_{d}"] = x[:, j]
        hits0, sizes = self._base_accuracies()
        acc = {d: float(100.0 * hits0[0][j] / sizes[j]) for j, d in enumerate(self.domains)}
        return table, acc, {d: int(s) for d, s in zip(self.domains, sizes, strict=True)}

    def probe_pass(self) -> pd.DataFrame:
        """Every client's probe pass at w_t alone, without the server's passes of
        :meth:`probe_table`: ``client_id, domain, n_samples, loss, F, B`` (what a baseline
        rule reading losses or Fisher traces reads). Trains nothing."""
        fed, probe = self._fed, self._probe_stats()
        return pd.DataFrame(
            {
                "client_id": list(fed.client_ids),
                "domain": list(fed.client_domain),
                "n_samples": fed.n_samples.astype(np.int64),
                "loss": probe.loss.cpu().numpy(),
                "F": np.maximum(probe.fisher.cpu().numpy(), F_FLOOR),
                "B": self._B,
            }
        )

    def update_vectors(self, source: str) -> np.ndarray:
        """One vector per client (client order, float32, shape (N, P)), what a rule reading
        the clients' updates sees:

        * ``stale``: the update Δ_i the client last had committed (the server received it
          then; rows of clients never committed are NaN);
        * ``fresh``: every client's update at w_t (training those not yet trained: the
          upper bound a deployment pays N trainings for);
        * ``partial``: minus each client's mean gradient on its probe batch at the model it
          last received (DivFL's partial gradients): every client's at the first call (round 0
          in a run), and from then on each committed client's at the model it trained from,
          kept at every :meth:`step`;
        * ``probe``: minus every client's mean gradient on its probe batch at w_t (the
          direction of a first local step; the probe pass, uploaded model-sized).
        """
        n = len(self._index)
        if source == VectorSource.PARTIAL:
            if not self._partial:  # the first read: every client's gradient at w_t
                self._partial = dict(enumerate(-self._probe_stats().grad.detach()))
            return (
                torch.stack([self._partial[i] for i in range(n)]).to("cpu", torch.float32).numpy()
            )
        if source == VectorSource.STALE:
            if not self.keep_committed:
                raise OracleError("update vectors: stale ones need keep_committed from round 0")
            out = torch.full((n, self._w.numel()), float("nan"), dtype=torch.float32)
            for i, delta in self._committed.items():
                out[i] = delta.to("cpu", torch.float32)
            return out.numpy()
        if source == VectorSource.FRESH:
            idx = list(range(n))
            self._ensure_updates(idx)
            return torch.stack([self._updates[i][0] for i in idx]).to("cpu", torch.float32).numpy()
        if source == VectorSource.PROBE:
            return (-self._probe_stats().grad).to("cpu", torch.float32).numpy()
        known = ", ".join(VectorSource)
        raise OracleError(f"update vectors: source {source!r} is not one of {known}")

    def local_work(self) -> dict[str, int]:
        """Sample-gradient evaluations of local training of every client trained at w_t so
        far (steps x batch, every batch full, plus the probe-set gradients of each
        gamma-inexact check): the deployment's training cost of this round's clients."""
        fed, cfg = self._fed, self.config
        out = {}
        for i, (_, taken, _) in self._updates.items():
            n = int(fed.n_samples[i])
            b, steps = plan_steps(n, cfg.batch_size, cfg.budget(fed.client_ids[i]))
            work = int(taken) * b
            if cfg.gamma > 0:
                check = max(1, math.ceil(math.ceil(n / b) / 4))
                work += (min(int(taken), steps - 1) // check) * len(fed.probe[i])
            out[fed.client_ids[i]] = work
        return out

    def probe_sizes(self) -> dict[str, int]:
        """Samples in every client's probe batch (forward + backward counted as one each)."""
        return {c: len(p) for c, p in zip(self._fed.client_ids, self._fed.probe, strict=True)}

    @property
    def model_bytes(self) -> int:
        """Bytes of one model-sized message: the parameter count times its dtype's size."""
        return int(self._w.numel() * self._w.element_size())

    @property
    def n_classes(self) -> int:
        return int(self._fed.n_classes)

    @property
    def measured_clients(self) -> tuple[str, ...]:
        """Ids of the clients measured at this round (their logits are kept until the step)."""
        return tuple(self._fed.client_ids[i] for i in sorted(self._logits))

    def round_logits(self, clients: Sequence[str] | None = None) -> ValidationLogits:
        """Validation logits (float16) of w_t + Δ_i for clients measured this round.

        The rows are the clients (default: every client measured by :meth:`round_stats` at
        this round, in federation order); samples are the validation sets of the domains one
        after another (the ``U_<domain>`` sets), with their labels and domains.
        """
        idx = sorted(self._logits) if clients is None else self._resolve(clients)
        lost = [i for i in idx if i not in self._logits]
        if lost or not idx:
            who = self._fed.client_ids[lost[0]] if lost else "any client"
            raise OracleError(f"round_logits: {who} was not measured at round {self.round}")
        val = self._sets["val"]
        ys = [val[d][1].cpu().numpy() for d in self.domains]
        return ValidationLogits(
            round=self.round,
            ids=np.array([self._fed.client_ids[i] for i in idx], dtype=str),
            z=np.stack([self._logits[i] for i in idx]),
            y=np.concatenate(ys).astype(np.int64),
            domain=np.concatenate([np.full(len(y), j) for j, y in enumerate(ys)]).astype(np.int64),
            domains=tuple(self.domains),
        )

    def evaluate_aggregate(self, selection: Sequence[str]) -> tuple[float, np.ndarray]:
        """The realized value of a selection: validation accuracy (%) of the sample-weighted
        aggregate w_t + Σ p_i Δ_i, pooled U and per domain U_d (D,), without committing it.

        The quantity surrogates predict (:mod:`selection.surrogates`); one forward pass over
        the validation sets.
        """
        hits, sizes = self._accuracies(self._aggregate(selection, None).unsqueeze(0), "val")
        return float(100.0 * hits[0].sum() / sizes.sum()), 100.0 * hits[0] / sizes

    def evaluate(
        self,
        selection: Sequence[str],
        *,
        weights: Mapping[str, float] | None = None,
        split: str = "test",
    ) -> dict[str, float]:
        """Accuracy (%) of w_t + aggregate(updates of ``selection``) without committing it.

        Returns:
            ``acc_<domain>``, ``acc_pooled``, ``acc_avg`` (mean over domains), ``acc_worst``.
        """
        if split not in ("val", "test"):
            raise OracleError(f"split={split!r} must be 'val' or 'test'")
        return self._metrics(self._aggregate(selection, weights), split)

    def step(
        self,
        selection: Sequence[str],
        *,
        weights: Mapping[str, float] | None = None,
        global_stats: bool = True,
    ) -> dict[str, float]:
        """Commit the aggregation of ``selection``; advance to round t+1.

        Args:
            selection: the committed client ids.
            weights: aggregation weights by client id (default: the configured rule).
            global_stats: also report ``global_loss`` and ``B_dissimilarity`` at w_{t+1}, the
                simulator's own records: a probe pass of every client at w_{t+1}, which a
                round that needs no probe pass (a rule reading only sizes) would not run.
                Adaptive μ computes the losses it needs either way.

        Returns:
            Test metrics of w_{t+1} (keys of :meth:`evaluate`) plus ``round`` (t+1), ``mu``
            for its local solves and, with ``global_stats``, ``global_loss`` and
            ``B_dissimilarity`` at w_{t+1}.
        """
        w_new = self._aggregate(selection, weights)
        if self.keep_committed:
            for i in self._resolve(selection, "selection"):
                self._committed[i] = self._updates[i][0].detach()
        if self._partial:  # the committed clients' gradients at w_t, the model they received
            picks, grad = self._probe_part(self._resolve(selection, "selection"))
            for i, g in zip(picks.tolist(), grad, strict=True):
                self._partial[i] = -g.detach()
        adaptive = self.config.adaptive_mu
        old_loss = self._global_loss() if adaptive else None
        self._w = w_new.detach()
        #: :meth:`local_work` of the round just committed (its clients' training)
        self.last_work = self.local_work()
        self.round += 1
        self._clear_round()
        if adaptive:
            if self._global_loss() > old_loss:
                self._mu, self._drops = self._mu + 0.1, 0
            else:
                self._drops += 1
                if self._drops >= 5:
                    self._mu, self._drops = max(0.0, self._mu - 0.1), 0
        out = self.test_accuracy()
        if global_stats:
            out.update(self.global_stats())
        else:
            out.update(round=self.round, mu=self._mu)
        return out

    def _global_loss(self) -> float:
        p = self._probe_stats()
        n = torch.as_tensor(self._fed.n_samples, dtype=torch.float64, device=p.loss.device)
        return float((n * p.loss).sum() / n.sum())

    def global_stats(self) -> dict[str, float]:
        """``round``, sample-weighted probe ``global_loss``, ``B_dissimilarity`` and ``mu`` at w_t."""
        p = self._probe_stats()
        n = torch.as_tensor(self._fed.n_samples, dtype=torch.float32, device=p.grad.device)
        return {
            "round": self.round,
            "global_loss": self._global_loss(),
            "B_dissimilarity": b_dissimilarity(p.grad, n),
            "mu": self._mu,
        }

    def test_accuracy(self) -> dict[str, float]:
        """Test accuracy (%) of the current global model (keys of :meth:`evaluate`)."""
        return self._metrics(self._w, "test")

    @property
    def mu(self) -> float:
        """The proximal coefficient used for this round's local solves."""
        return self._mu

    @property
    def params(self) -> torch.Tensor:
        """A copy of the flat global parameters w_t, (P,)."""
        return self._w.detach().clone()

    def state_dict(self) -> dict:
        """Everything needed to resume exactly (plain types and tensors: ``weights_only`` safe)."""
        return {
            "format": STATE_FORMAT,
            "config": self.config.to_toml(),
            "round": self.round,
            "params": self._w.detach().cpu().clone(),
            "mu": float(self._mu),
            "drops": int(self._drops),
            # the updates kept for a rule that reads the last aggregated ones (keep_committed)
            "committed": {int(i): d.detach().cpu().clone() for i, d in self._committed.items()},
            # the partial gradients kept for a rule that reads them (update_vectors("partial"))
            "partial": {int(i): g.detach().cpu().clone() for i, g in self._partial.items()},
        }

    def load_state_dict(self, state: Mapping) -> None:
        """Restore a :meth:`state_dict` taken from an oracle with the same configuration."""
        if not isinstance(state, Mapping) or state.get("format") != STATE_FORMAT:
            raise CheckpointError(f"state is not an oracle state dict ({STATE_FORMAT})")
        if OracleConfig.from_toml(state["config"]) != self.config:
            raise CheckpointError("state was saved with a different configuration")
        params = state["params"]
        if not isinstance(params, torch.Tensor) or params.shape != self._w.shape:
            raise CheckpointError(
                f"state params have shape {getattr(params, 'shape', None)}, "
                f"expected {tuple(self._w.shape)}"
            )
        self._w = params.to(self.device, torch.float32).clone()
        self.round = int(state["round"])
        self._mu = float(state["mu"])
        self._drops = int(state["drops"])
        self._committed.clear()  # an older state does not hold them: not known then
        for i, delta in dict(state.get("committed") or {}).items():
            self._committed[int(i)] = delta.to(self.device, torch.float32)
        self._partial = {
            int(i): g.to(self.device, torch.float32)
            for i, g in dict(state.get("partial") or {}).items()
        }
        self._clear_round()


def small_oracle(**changes: Any) -> Oracle:
    """The docstring examples' oracle: :func:`~fl_oracle.sim.config.small_config`'s tiny
    federation (``changes`` override its fields), its generated images built in a temporary
    cache that is not kept.

    Examples:
        >>> from fl_oracle.sim.oracle import small_oracle
        >>> oracle = small_oracle()
        >>> oracle.round, list(oracle.domains), len(oracle.clients)
        (0, ['svhn', 'syn'], 4)
    """
    import tempfile

    with tempfile.TemporaryDirectory() as cache:  # generated stand-ins, not kept
        return Oracle(small_config(**changes), cache_dir=cache)
