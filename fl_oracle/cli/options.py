"""Help texts of the options several commands share (one wording, one place)."""

__all__ = ["MODEL_HELP", "DATASET_HELP", "SPLIT_HELP"]

MODEL_HELP = (
    "cnn | cnn-small | cnn-large | fedbn-cnn | resnet10 | resnet18 | module:factory "
    "(a factory(num_classes=, in_channels=) on PYTHONPATH)."
)
DATASET_HELP = (
    "Folder of image folders: one per domain, in it one per class (any image size, classes, "
    "domains), used instead of Digits-4."
)
SPLIT_HELP = "CSV path,split fixing the --dataset train/test split (default: 20% test)."
