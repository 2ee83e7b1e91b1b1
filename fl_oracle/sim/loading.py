"""What the federation's data takes: its images loaded (only what the clients and the
validation sets use; one domain at a time) after a check that they fit this machine's memory."""

from __future__ import annotations

import os

from fl_oracle.errors import ConfigError
from fl_oracle.sim.config import OracleConfig
from selection.progress import ProgressFn

__all__ = ["load_federation_data", "check_fits"]


def load_federation_data(
    config: OracleConfig, *, cache_dir=None, progress: ProgressFn | None = None
) -> dict:
    """Load exactly what the federation needs (clients x samples + validation per domain);
    an image-folder ``config.dataset`` is decoded whole. A federation whose images cannot fit
    this machine's memory is refused first (:func:`check_fits`).

    Examples:
        The Digits-4 default loads one domain at a time, on first access: each domain's
        training images are its clients' 2 x 8 plus 10 for validation (no hold-outs):

        >>> import tempfile
        >>> from fl_oracle.sim.config import small_config
        >>> from fl_oracle.sim.loading import load_federation_data
        >>> config = small_config()
        >>> with tempfile.TemporaryDirectory() as cache:  # generated stand-ins, not kept
        ...     data = load_federation_data(config, cache_dir=cache)
        ...     train, test = data["syn"]["train"], data["syn"]["test"]
        >>> list(data), len(train.labels), len(test.labels), config.train_needed()["syn"]
        (['svhn', 'syn'], 26, 10, 26)
        >>> tuple(train.images.shape), train.images.dtype, train.source
        ((26, 32, 32, 3), torch.uint8, 'generated')
    """
    check_fits(config)
    if config.dataset is not None:
        from fl_oracle.sim.data.folders import load_dataset, scan_dataset

        index = scan_dataset(
            config.dataset,
            split_file=config.split_file,
            test_fraction=config.test_fraction,
            seed=config.data_seed,
        )
        train = config.train_needed()
        need = {  # decode only what the federation uses (a seeded subset of a large folder)
            d: {"train": train[d], "test": config.test_per_domain} for d in config.domains
        }
        return load_dataset(
            index,
            resolution=config.resolution,
            domains=config.domains,
            limit=need,
            seed=config.data_seed,
            progress=progress,
        )
    from fl_oracle.sim.data import load_digits
    from fl_oracle.sim.data.api import bundled_shortfall
    from fl_oracle.sim.data.bundled import TRAIN_IMAGES
    from fl_oracle.sim.partition import share_split, shared_request

    # the bundled genuine digits shared by their clients where they fall short (arithmetic,
    # the partition shares them the same way); refused only where not one image per client
    # is left
    short = {
        d: TRAIN_IMAGES
        for d, need in config.train_needed().items()
        if bundled_shortfall(d, need, config.data_root, config.data_mode)
    }
    config, notes = share_split(config, short)
    n_train = shared_request(config, {d: short[d] for d in notes})
    for d, need in n_train.items():
        why = bundled_shortfall(d, need, config.data_root, config.data_mode)
        if why:
            raise ConfigError(why)
    from fl_oracle.sim.data.api import check_real
    from fl_oracle.sim.data.stream import DomainStream

    check_real(config.domains, config.data_root, config.data_mode)  # every missing file at once

    def load(d: str) -> dict:
        return load_digits(
            [d],
            root=config.data_root,
            mode=config.data_mode,
            n_train=n_train,
            n_test=config.test_per_domain,
            seed=config.data_seed,
            standardize=True,
            cache_dir=cache_dir,
            progress=progress,
            compact=True,  # uint8 pixels, decoded per client on use (fl_oracle.sim.store)
        )[d]

    # one domain at a time: the partition stores each domain's clients before the next loads
    return DomainStream(config.domains, load)


def check_fits(config: OracleConfig, memory: int | None = None) -> None:
    """Refuse, before any data is loaded or generated, a federation whose images alone exceed
    the machine's physical memory (``memory`` bytes; default: this machine's).

    Examples:
        >>> from fl_oracle.sim.config import OracleConfig
        >>> from fl_oracle.sim.loading import check_fits
        >>> check_fits(OracleConfig(), memory=16 * 2**30)  # 20 clients: fits, no output
        >>> check_fits(OracleConfig(clients_per_domain=100_000), memory=16 * 2**30)
        Traceback (most recent call last):
        ...
        fl_oracle.errors.ConfigError: the federation's images need 544.7 GiB (400,000 clients,
        100,000 per domain, ...), more than this machine's 16.0 GiB
    """
    if memory is None:
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not a POSIX machine: no check
            return
    need = config.federation_bytes()
    if need > memory:
        n = config.clients_per_domain * len(config.domains)
        raise ConfigError(
            f"the federation's images need {need / 2**30:,.1f} GiB ({n:,} clients, "
            f"{config.clients_per_domain:,} per domain, samples per client "
            f"{dict(config.samples_per_client)}), more than this machine's "
            f"{memory / 2**30:,.1f} GiB"
        )
