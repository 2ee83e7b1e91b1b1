"""Split each domain's training set into disjoint client shards and a validation subset.

Why one module past 450 lines: its code is one job (which sample goes to which client, to
validation or to a hold-out) whose rules (equal shares, Dirichlet label skew, log-normal
sizes, bundled digits shared where they fall short) must agree with each other and with
:meth:`fl_oracle.sim.config.OracleConfig.train_needed` to the sample; the rest is their
documentation.

Every client of a domain gets the same number of samples (1% of the real training set by
default), drawn without replacement; an optional Dirichlet(alpha) label skew tilts each
client's class mix. The validation subset is drawn from what is left of the training split,
so it never overlaps a client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fl_oracle.errors import ConfigError

__all__ = ["DomainSplit", "partition_domain", "label_histogram", "local_holdouts", "N_CLASSES"]

N_CLASSES = 10


@dataclass(frozen=True)
class DomainSplit:
    """Indices into one domain's training split.

    Attributes:
        clients: one int64 index array per client, each of length ``samples_per_client``.
        val: int64 indices of the validation subset.
    """

    clients: tuple[np.ndarray, ...]
    val: np.ndarray


def partition_domain(
    labels: np.ndarray,
    *,
    domain: str,
    n_clients: int,
    per_client: int | Sequence[int],
    n_val: int,
    rng: np.random.Generator,
    alpha: float | None = None,
    n_classes: int = N_CLASSES,
) -> DomainSplit:
    """Draw ``n_clients`` disjoint shards of ``per_client`` samples plus ``n_val`` validation ones.

    Args:
        labels: (N,) int labels of the domain's training split.
        domain: the domain's name (for error messages).
        n_clients: number of clients.
        per_client: samples per client (one number, or one per client).
        n_val: validation samples.
        rng: the partition's random stream.
        alpha: Dirichlet concentration of each client's class mix; None = uniform draw.
        n_classes: number of classes (labels lie in ``[0, n_classes)``).

    Returns:
        The client shards and the validation indices, all disjoint.

    Raises:
        ConfigError: when the split holds fewer than ``n_clients * per_client + n_val`` samples.
    """
    labels = np.asarray(labels)
    sizes = (
        [int(per_client)] * n_clients
        if isinstance(per_client, int | np.integer)
        else [int(v) for v in per_client]
    )
    if len(sizes) != n_clients:
        raise ConfigError(f"domain {domain}: {len(sizes)} client sizes for {n_clients} clients")
    need = sum(sizes) + n_val
    if need > len(labels):
        what = (
            f"{n_clients} clients x {sizes[0]} samples"
            if len(set(sizes)) == 1
            else (f"{n_clients} clients of {sum(sizes)} samples in all")
        )
        raise ConfigError(
            f"domain {domain}: {what} + {n_val} validation "
            f"= {need} exceeds its {len(labels)} training samples"
        )
    if alpha is None:
        perm = rng.permutation(len(labels))
        ends = np.cumsum([0, *sizes])
        shards = tuple(np.sort(perm[ends[i] : ends[i + 1]]) for i in range(n_clients))
        rest = perm[int(ends[-1]) :]
    else:
        pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in range(n_classes)]
        shards_l = []
        for per_i in sizes:
            p = rng.dirichlet(np.full(n_classes, alpha))
            want = rng.multinomial(per_i, p)
            take: list[int] = []
            for c in range(n_classes):
                k = min(int(want[c]), len(pools[c]))
                take += pools[c][:k]
                del pools[c][:k]
            short = per_i - len(take)
            if short:  # a class ran dry: fill from the largest remaining pools
                order = np.argsort([-len(pl) for pl in pools], kind="stable")
                for c in order:
                    k = min(short, len(pools[c]))
                    take += pools[c][:k]
                    del pools[c][:k]
                    short -= k
                    if not short:
                        break
            shards_l.append(np.sort(np.asarray(take, dtype=np.int64)))
        shards = tuple(shards_l)
        rest = rng.permutation(np.asarray([i for pl in pools for i in pl], dtype=np.int64))
    val = np.sort(rest[:n_val]).astype(np.int64)
    return DomainSplit(tuple(s.astype(np.int64) for s in shards), val)


def local_holdouts(
    labels: np.ndarray,
    split: DomainSplit,
    per_client: int,
    rng: np.random.Generator,
    n_classes: int = N_CLASSES,
) -> tuple[np.ndarray, ...]:
    """Each client's local hold-out: up to ``per_client`` unused samples with its class mix.

    Drawn from what neither a client nor the validation subset holds, so hold-outs are
    disjoint from every shard, from the validation subset and from each other. A client's
    hold-out follows its own label distribution (a multinomial draw from its histogram, topped
    up from any class when a class runs dry). When the domain has too few unused samples the
    hold-outs shrink equally (``len(unused) // n_clients`` each, possibly 0).

    Args:
        labels: (N,) labels of the domain's training split.
        split: the domain's client shards and validation subset.
        per_client: wanted hold-out size per client.
        rng: a stream of its own (drawing hold-outs does not move the partition's stream).

    Returns:
        One sorted int64 index array per client.
    """
    labels = np.asarray(labels)
    used = np.zeros(len(labels), dtype=bool)
    for s in (*split.clients, split.val):
        used[s] = True
    free = np.flatnonzero(~used)
    m = min(int(per_client), len(free) // max(1, len(split.clients)))
    pools = [list(rng.permutation(free[labels[free] == c])) for c in range(n_classes)]
    out = []
    for shard in split.clients:
        hist = label_histogram(labels[shard], n_classes)
        want = rng.multinomial(m, hist / hist.sum()) if m and hist.sum() else np.zeros(n_classes)
        take: list[int] = []
        for c in range(n_classes):
            k = min(int(want[c]), len(pools[c]))
            take += pools[c][:k]
            del pools[c][:k]
        short = m - len(take)
        for c in np.argsort([-len(pl) for pl in pools], kind="stable"):
            if short <= 0:
                break
            k = min(short, len(pools[c]))
            take += pools[c][:k]
            del pools[c][:k]
            short -= k
        out.append(np.sort(np.asarray(take, dtype=np.int64)))
    return tuple(out)


def label_histogram(labels: np.ndarray, n_classes: int = N_CLASSES) -> np.ndarray:
    """Class counts ``(n_classes,)`` float64 of an int label array."""
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}), got {labels.min()}..{labels.max()}")
    return np.bincount(labels, minlength=n_classes).astype(np.float64)


# ---------------------------------------------------------------------------- federation


@dataclass(frozen=True)
class Federation:
    """Every tensor the oracle trains and measures on, already on the compute device.

    Attributes:
        domains: domain names.
        client_ids: ids ``<domain>-<i>`` in domain-major order.
        client_domain: the domain of each client.
        n_samples: (K,) training-set sizes.
        xs, ys: per-client training images (n_k, *image_shape) float32 and labels (n_k,) int64.
        probe: per-client int64 indices of the probe set (Fisher, loss, gradients).
        val: domain -> (images, labels) validation subset.
        test: domain -> (images, labels) test split.
        hist: (K, n_classes) label histograms of the clients.
        local: per-client (images, labels) local hold-out (:func:`local_holdouts`; empty
            tensors when ``config.local_holdout`` is 0 or the domain has no unused samples).
        sources: domain -> ``"real"``, ``"genuine, bundled"`` or ``"generated stand-in"``.
        n_classes: number of classes.
        image_shape: (channels, height, width) of every image.
    """

    domains: tuple[str, ...]
    client_ids: tuple[str, ...]
    client_domain: tuple[str, ...]
    n_samples: np.ndarray
    xs: tuple
    ys: tuple
    probe: tuple
    val: dict
    test: dict
    hist: np.ndarray
    sources: dict
    local: tuple = ()
    n_classes: int = N_CLASSES
    image_shape: tuple[int, int, int] = (3, 32, 32)
    shared: dict = field(default_factory=dict)  # domain -> how its clients share a small split


def _split_arrays(split, what: str):
    """(images, labels, source, decode) of a DomainData-like object (attributes images,
    labels, source; optional ``encoding``). ``decode`` is None for float images; for the
    compact uint8 pixels (N, 32, 32, 3) it turns a block of them into float32 (n, 3, 32, 32)
    (:func:`fl_oracle.sim.data.api.decode_images`)."""
    import torch

    try:
        x, y = split.images, split.labels
    except AttributeError as exc:
        raise ConfigError(f"data for {what} lacks images/labels") from exc
    encoding = str(getattr(split, "encoding", "float"))
    decode = None
    if encoding.startswith("uint8"):
        from fl_oracle.sim.data.api import decode_images

        x = torch.as_tensor(x, dtype=torch.uint8)
        standardize = encoding == "uint8-standardize"
        decode = lambda block: decode_images(block, standardize)  # noqa: E731
    else:
        x = torch.as_tensor(x, dtype=torch.float32)
    y = torch.as_tensor(y, dtype=torch.int64)
    if x.dim() != 4 or len(x) != len(y):
        raise ConfigError(
            f"data for {what}: images {tuple(x.shape)} / labels {tuple(y.shape)} "
            "must be (N, channels, height, width) and (N,)"
        )
    return x, y, str(getattr(split, "source", "real")), decode


def share_split(config, available: dict[str, int]):
    """Clients sharing a training split too small for their sizes: ``(config, notes)``.

    For each domain in ``available`` (its training split's image count; the bundled genuine
    MNIST holds 4,000) that cannot give every client its size besides the hold-outs and the
    validation set, the mean client size is lowered until the clients fit (log-normal sizes
    keep their spread). ``notes`` says so per domain, for the run's record; a domain where
    not even one image per client is left is unchanged (the partition then refuses it).
    Arithmetic on the settings: nothing is loaded.
    """
    notes: dict[str, str] = {}
    sizes = dict(config.samples_per_client)
    need = config.train_needed()
    cpd, hold = config.clients_per_domain, config.local_holdout
    for d, have in available.items():
        if d not in config.domains or need[d] <= have:
            continue
        room = have - config.val_per_domain  # for the clients' shards and hold-outs
        if room < cpd:
            continue  # not one image a client
        old = sizes[d]
        # full hold-outs while they leave every client an image; beyond that the shards and
        # the hold-outs share what is left in the proportion of their sizes (local_holdouts
        # shrinks the hold-outs equally to the unused images)
        shrink = room - cpd * hold < cpd
        train_room = room * old // (old + hold) if shrink else room - cpd * hold
        train_room = max(train_room, cpd)
        n = max(1, old * train_room // max(1, sum(config.client_sizes()[d])))
        trial = config.replace(samples_per_client={**sizes, d: n})
        while n > 1 and sum(trial.client_sizes()[d]) > train_room:
            n -= 1
            trial = config.replace(samples_per_client={**sizes, d: n})
        if sum(trial.client_sizes()[d]) > train_room:
            continue
        sizes[d] = n
        note = (
            f"{cpd} {d} clients share its {have:,} training images: "
            f"{n} samples a client{' on average' if config.size_sigma else ''} instead of {old}"
        )
        if shrink and hold:
            h = (room - sum(trial.client_sizes()[d])) // cpd
            note += f", {h} local hold-out images instead of {hold}"
        notes[d] = note
    return (config.replace(samples_per_client=sizes) if notes else config), notes


def shared_request(config, available: dict[str, int]) -> dict[str, int]:
    """Training images to load per domain once :func:`share_split` has shared the small
    splits in ``available``: what the settings need, at most what a shared split holds."""
    need = config.train_needed()
    return {d: min(n, available[d]) if d in available else n for d, n in need.items()}


def build_federation(config, data: dict, device) -> Federation:
    """Partition the domains' training splits into clients and validation, and pick probe sets.

    Args:
        config: an :class:`~fl_oracle.sim.config.OracleConfig`.
        data: ``{domain: {"train": DomainData, "test": DomainData}}``.
        device: torch device for every tensor.

    Returns:
        The :class:`Federation`; deterministic in ``config.seed``.
    """
    import torch

    ss = np.random.SeedSequence([config.seed, 0x5EED])
    rngs = [np.random.default_rng(s) for s in ss.spawn(len(config.domains) * 2)]
    hold_ss = np.random.SeedSequence([config.seed, 0x10CA1])  # own stream: partition unchanged
    hold_rngs = [np.random.default_rng(s) for s in hold_ss.spawn(len(config.domains))]
    n_hold = int(getattr(config, "local_holdout", 0) or 0)
    ids, doms, n, xs, ys, probe, hists, local = [], [], [], [], [], [], [], []
    val, test, sources = {}, {}, {}
    # a streamed mapping (fl_oracle.sim.data.stream.DomainStream) loads each domain when
    # asked and states its classes: every domain is asked for once, in order
    streamed = bool(getattr(data, "streamed", False))
    for d in config.domains:
        if d not in data or (not streamed and ("train" not in data[d] or "test" not in data[d])):
            raise ConfigError(f"data lacks domain {d!r} (needs its 'train' and 'test' splits)")
    n_classes = (
        int(data.n_classes)
        if streamed
        else max(
            int(getattr(data[d][s], "n_classes", N_CLASSES))
            for d in config.domains
            for s in ("train", "test")
        )
    )
    from fl_oracle.sim.data.base import model_shape
    from fl_oracle.sim.store import BlockWriter, ClientImages, Paired, release_free_memory

    shared: dict[str, str] = {}
    shape = encoding = None
    blocks = hold_blocks = decode_all = None
    local_y: list = []
    for j, d in enumerate(config.domains):
        splits = data[d]
        if streamed and ("train" not in splits or "test" not in splits):
            raise ConfigError(f"data lacks domain {d!r} (needs its 'train' and 'test' splits)")
        # the bundled genuine digits are shared among however many clients ask for them
        if str(getattr(splits["train"], "source", "")) == "bundled":
            config, note = share_split(config, {d: len(splits["train"].labels)})
            shared.update(note)
        for s in ("train", "test"):
            enc = str(getattr(splits[s], "encoding", "float"))
            if encoding is not None and enc != encoding:
                raise ConfigError(
                    f"data for {d}/{s}: images encoded {enc!r}, the other domains' {encoding!r}"
                )
            encoding = enc
        x, y, src, decode = _split_arrays(splits["train"], f"{d}/train")
        xt, yt, _, decode_t = _split_arrays(splits["test"], f"{d}/test")
        del splits
        if decode is not None and blocks is None:
            # compact pixels: every client's uint8 block stored once (in memory, or in a
            # temporary file for a large federation) and decoded when it is used
            blocks, hold_blocks, decode_all = BlockWriter(), BlockWriter(), decode
        for what, arr, lab, dec in ((f"{d}/train", x, y, decode), (f"{d}/test", xt, yt, decode_t)):
            got = model_shape(tuple(arr.shape[1:]), "float" if dec is None else "uint8")
            shape = got if shape is None else shape
            if got != shape:
                raise ConfigError(
                    f"data for {what}: images {got} differ from the other domains' {shape}"
                )
            if len(lab) and (int(lab.min()) < 0 or int(lab.max()) >= n_classes):
                raise ConfigError(f"data for {what}: labels outside 0..{n_classes - 1}")

        def to_device(a, dec=decode):
            return (a if dec is None else dec(a.numpy())).to(device)

        sources[d] = {"real": "real", "bundled": "genuine, bundled"}.get(src, "generated stand-in")
        per = config.client_sizes()[d]
        split = partition_domain(
            y.numpy(),
            domain=d,
            n_clients=config.clients_per_domain,
            per_client=per[0] if len(set(per)) == 1 else per,
            n_val=config.val_per_domain,
            rng=rngs[2 * j],
            alpha=config.dirichlet_alpha,
            n_classes=n_classes,
        )
        holds = local_holdouts(y.numpy(), split, n_hold, hold_rngs[j], n_classes)
        for h in holds:
            t = torch.as_tensor(h)
            if hold_blocks is None:
                local.append((x[t].to(device), y[t].to(device)))
            else:
                hold_blocks.add(x[t].numpy())
                local_y.append(y[t].to(device))
        for i, idx in enumerate(split.clients):
            t = torch.as_tensor(idx)
            ids.append(f"{d}-{i}")
            doms.append(d)
            n.append(len(idx))
            if blocks is None:
                xs.append(x[t].to(device))
            else:
                blocks.add(x[t].numpy())
            ys.append(y[t].to(device))
            hists.append(label_histogram(y[t].numpy(), n_classes))
            cap = (
                len(idx) if config.fisher_samples is None else min(config.fisher_samples, len(idx))
            )
            probe.append(
                torch.as_tensor(np.sort(rngs[2 * j + 1].permutation(len(idx))[:cap])).to(device)
            )
        v = torch.as_tensor(split.val)
        val[d] = (to_device(x[v]), y[v].to(device))
        if config.test_per_domain is not None and config.test_per_domain < len(yt):
            keep = torch.as_tensor(
                np.sort(rngs[2 * j + 1].permutation(len(yt))[: config.test_per_domain])
            )
            xt, yt = xt[keep], yt[keep]
        test[d] = (to_device(xt), yt.to(device))  # the encodings agree (checked above)
        del x, xt  # a domain's pixels are not held past its partition
        if blocks is not None:
            release_free_memory()
    if streamed:
        data.release()  # a large federation's last domain is not held past its partition
    if blocks is not None:
        # one decoder serves every domain (their encodings agree)
        def decode_dev(block, dec=decode_all):
            return dec(block).to(device)

        xs = ClientImages(blocks, decode_dev)
        local = Paired(ClientImages(hold_blocks, decode_dev), tuple(local_y))
    return Federation(
        tuple(config.domains),
        tuple(ids),
        tuple(doms),
        np.asarray(n, dtype=np.int64),
        xs if isinstance(xs, ClientImages) else tuple(xs),
        tuple(ys),
        tuple(probe),
        val,
        test,
        np.stack(hists),
        sources,
        local if isinstance(local, Paired) else tuple(local),
        n_classes,
        shape,
        shared,
    )
