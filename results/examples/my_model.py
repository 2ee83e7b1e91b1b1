"""A model as a user brings it: a plain ``nn.Module`` factory for ``--model my_model:make_net``.

    PYTHONPATH=results/examples fedsel oracle --dataset runs/shapes -r 2 -o runs/shapes-oracle \\
        --model my_model:make_net

fedsel calls ``make_net(num_classes=C, in_channels=c)`` with the dataset's class and channel
counts; the network must accept any input size it is given (here: adaptive pooling).
"""

from torch import nn


def make_net(num_classes: int, in_channels: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(in_channels, 16, 3, padding=1),
        nn.GroupNorm(4, 16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.GroupNorm(4, 32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(32 * 16, num_classes),
    )
