"""A model of ``pytorch_lightning`` (Lightning's older name, the same classes) for
gradguard."""

from lightning.pytorch import LightningDataModule, LightningModule, Trainer

__all__ = ["LightningDataModule", "LightningModule", "Trainer"]
