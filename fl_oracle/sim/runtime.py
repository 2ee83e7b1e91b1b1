"""Where and how the oracle computes: the torch device, the thread count, and each client's
mini-batch stream seed (randomness as a pure function of seed, round and client)."""

from __future__ import annotations

import numpy as np
import torch

from fl_oracle.errors import OracleError

__all__ = ["resolve_device", "set_threads", "stream_seed"]


def resolve_device(name: str) -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is an error.

    Examples:
        >>> import torch
        >>> from fl_oracle.sim.runtime import resolve_device
        >>> resolve_device("cpu")
        device(type='cpu')
        >>> resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
        True
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise OracleError("device=cuda requested but no CUDA device is available")
    return torch.device(name)


def set_threads(n: int) -> None:
    """Run this process's compute on ``n`` threads: torch's intra-op pool and the BLAS and
    OpenMP pools numpy, scipy and scikit-learn use (threadpoolctl; a process-wide setting,
    as torch's is).

    Examples:
        >>> import torch
        >>> from threadpoolctl import threadpool_info
        >>> from fl_oracle.sim.runtime import set_threads
        >>> n = torch.get_num_threads()
        >>> set_threads(1)
        >>> torch.get_num_threads(), {pool["num_threads"] for pool in threadpool_info()}
        (1, {1})
        >>> set_threads(n)  # back to torch's count
    """
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(int(n))
    threadpool_limits(int(n))


def stream_seed(seed: int, round_: int, client: int) -> int:
    """The mini-batch stream seed of client ``client`` (federation index) in round ``round_``.

    The oracle, the Flower ClientApp and anything else that replays a client's local
    training take it from here, so the same (seed, round, client) draws the same batches.

    Examples:
        >>> from fl_oracle.sim.runtime import stream_seed
        >>> stream_seed(0, 1, 2)
        8503586547171507477
        >>> [stream_seed(0, 1, 2) == stream_seed(*other) for other in [(0, 1, 2), (0, 2, 2)]]
        [True, False]
    """
    ss = np.random.SeedSequence([seed, round_, client, 0xB47C])
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
