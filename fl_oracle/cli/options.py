"""Help texts of the options several commands share (one wording, one place)."""

from fl_oracle.sim.architectures import model_help

__all__ = [
    "MODEL_HELP",
    "DATASET_HELP",
    "SPLIT_HELP",
    "SIZES_HELP",
    "parse_sizes",
    "dataset_option",
    "resolution_option",
    "model_option",
]

MODEL_HELP = model_help()
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
        if name.strip() in out:
            raise typer.BadParameter(
                f"{text!r} gives domain {name.strip()!r} twice", param_hint="--samples-per-client"
            )
        out[name.strip()] = int(value)
    return out


def dataset_option():
    """``--dataset DIR`` (unset by default), as every command that builds a federation has it."""
    import typer

    return typer.Option(None, "--dataset", help=DATASET_HELP)


def resolution_option():
    """``--resolution`` (unset: the configuration's 32)."""
    import typer

    return typer.Option(
        None, "--resolution", min=4, help="Side --dataset images are resized to.", show_default="32"
    )


def model_option():
    """``--model`` (unset: the configuration's ``cnn``)."""
    import typer

    return typer.Option(None, "--model", help=MODEL_HELP, show_default="cnn")


SIZE_SIGMA_HELP = (
    "Log-normal spread σ of the client sizes (each domain's --samples-per-client is the mean; "
    "0: every client that size)."
)


def size_sigma_option():
    """``--size-sigma`` (unset: the configuration's 0, equal client sizes)."""
    import typer

    return typer.Option(None, "--size-sigma", min=0.0, max=3.0, help=SIZE_SIGMA_HELP,
                        show_default="0")  # fmt: skip
