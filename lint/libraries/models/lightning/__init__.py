"""A model of ``lightning`` for gradguard: the names it re-exports from
``lightning.pytorch`` (``import lightning as L; L.Trainer``)."""

from lightning.pytorch import LightningDataModule, LightningModule, Trainer

__all__ = ["LightningDataModule", "LightningModule", "Trainer"]
