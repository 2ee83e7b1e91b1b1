"""Torch modules as a user would write them, for the generic (torch.func) model path."""

import torch
from torch import nn


class DigitCNN(nn.Module):
    """The built-in ``cnn`` written as a plain module (same parameter names and order)."""

    def __init__(self, num_classes=10, in_channels=3):
        super().__init__()
        self.conv0 = nn.Conv2d(in_channels, 16, 3, padding=1)
        self.conv1 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc0 = nn.Linear(32 * 4 * 4, 64)
        self.fc1 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = nn.functional.avg_pool2d(x, 2)
        x = torch.relu(nn.functional.max_pool2d(self.conv0(x), 2))
        x = torch.relu(nn.functional.max_pool2d(self.conv1(x), 2))
        return self.fc1(torch.relu(self.fc0(x.flatten(1))))


def make_cnn(num_classes, in_channels):
    return DigitCNN(num_classes, in_channels)


def make_tiny(num_classes, in_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, 4, 3, padding=1),
        nn.GroupNorm(2, 4),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(16, num_classes),
    )


def make_wrong_output(num_classes, in_channels):
    return nn.Sequential(nn.Flatten(), nn.LazyLinear(num_classes + 1))


def make_bn1d(num_classes, in_channels):
    return nn.Sequential(
        nn.Flatten(), nn.LazyLinear(8), nn.BatchNorm1d(8), nn.Linear(8, num_classes)
    )


def not_a_module(num_classes, in_channels):
    return 42


class _Pair(nn.Module):
    """Returns (logits, features) or {"logits": ...}: not the logits tensor fedsel trains."""

    def __init__(self, num_classes: int, as_dict: bool) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Flatten(), nn.LazyLinear(num_classes))
        self.as_dict = as_dict

    def forward(self, x):
        z = self.fc(x)
        return {"logits": z} if self.as_dict else (z, x)


def make_tuple_output(num_classes, in_channels):
    return _Pair(num_classes, as_dict=False)


def make_dict_output(num_classes, in_channels):
    return _Pair(num_classes, as_dict=True)
