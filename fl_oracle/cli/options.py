"""Help texts of the options several commands share (one wording, one place)."""

__all__ = ["MODEL_HELP", "DATASET_HELP", "SPLIT_HELP", "SIZES_HELP", "parse_sizes"]

MODEL_HELP = (
    "cnn | cnn-small | cnn-large | fedbn-cnn | resnet10 | resnet18 | module:factory "
    "(a factory(num_classes=, in_channels=) on PYTHONPATH)."
)
DATASET_HELP = (
    "Folder of image folders: one per domain, in it one per class (any image size, classes, "
    "domains), used instead of Digits-4."
)
SPLIT_HELP = "CSV path,split fixing the --dataset train/test split (default: 20% test)."
SIZES_HELP = (
    "Training samples per client: one number for every domain or domain=n pairs "
    "(e.g. mnist=600,usps=72)."
)


def parse_sizes(text: str | None) -> int | dict[str, int] | None:
    """``--samples-per-client``: None, one integer, or ``domain=n`` pairs (typer error if bad)."""
    import typer

    if text is None:
        return None
    bad = typer.BadParameter(
        f"{text!r} is neither a number nor domain=n pairs", param_hint="--samples-per-client"
    )
    text = text.strip()
    if text.isdigit():
        return int(text)
    out: dict[str, int] = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            raise bad
        out[name.strip()] = int(value)
    return out
