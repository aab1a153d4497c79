"""``torchvision.models``: the residual blocks of ``resnet.py`` (no builder, no weights)."""

from torchvision.models import resnet

__all__ = ["resnet"]
