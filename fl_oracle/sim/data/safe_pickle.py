"""A restricted unpickler for FedBN's prepared ``.pkl`` files.

``pickle.load`` on a file from elsewhere runs whatever callables the file names. FedBN's
``{MNIST,SVHN,USPS,SynthDigits}/{train,test}.pkl`` only need numpy arrays (a tuple
``(images, labels)``), so :func:`load_numpy_pickle` admits exactly the globals numpy's own
array, dtype and scalar pickles use and refuses every other global with a :class:`DataError`
naming the file and the global, before anything is called.
"""

from __future__ import annotations

import importlib
import io
import pickle
from pathlib import Path
from typing import Any

from .base import DataError

__all__ = ["ALLOWED_GLOBALS", "load_numpy_pickle"]

# (module, name) pairs numpy array pickles reference (numpy 1.x spells numpy.core, 2.x numpy._core)
ALLOWED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    [(m, "_reconstruct") for m in ("numpy.core.multiarray", "numpy._core.multiarray")]
    + [(m, "scalar") for m in ("numpy.core.multiarray", "numpy._core.multiarray")]
    + [(m, "_frombuffer") for m in ("numpy.core.numeric", "numpy._core.numeric")]
    + [("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")]
)


def _resolve(module: str, name: str) -> Any:
    """Import an allowed global, mapping numpy.core <-> numpy._core across numpy versions."""
    candidates = [module]
    if module.startswith("numpy.core."):
        candidates.insert(0, "numpy._core." + module[len("numpy.core.") :])
    elif module.startswith("numpy._core."):
        candidates.append("numpy.core." + module[len("numpy._core.") :])
    for mod in candidates:
        try:
            return getattr(importlib.import_module(mod), name)
        except (ImportError, AttributeError):
            continue
    raise pickle.UnpicklingError(f"cannot resolve {module}.{name}")


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def __init__(self, fh: io.BufferedIOBase, where: str) -> None:
        super().__init__(fh)
        self._where = where

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise DataError(
                f"{self._where}: refused to unpickle global {module}.{name} "
                "(only numpy arrays are allowed)"
            )
        return _resolve(module, name)


def load_numpy_pickle(path: str | Path) -> Any:
    """Unpickle ``path`` admitting only numpy arrays, dtypes and scalars (and containers).

    Args:
        path: a pickle file, e.g. FedBN's ``MNIST/train.pkl``.

    Returns:
        The unpickled object (for FedBN files a tuple ``(images, labels)`` of arrays).

    Raises:
        DataError: the file names a global outside :data:`ALLOWED_GLOBALS`, or is not a
            readable pickle.
    """
    where = str(path)
    try:
        with open(path, "rb") as fh:
            return _NumpyOnlyUnpickler(fh, where).load()
    except DataError:
        raise
    except OSError as exc:
        raise DataError(f"{where}: cannot read ({exc.strerror or exc})") from None
    except Exception as exc:  # UnpicklingError, EOFError, TypeError from malformed data, ...
        raise DataError(f"{where}: not a numpy pickle ({type(exc).__name__}: {exc})") from None
