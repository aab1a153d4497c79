"""``learn2learn.algorithms``: MAML (``maml.py``)."""

from learn2learn.algorithms.maml import MAML, maml_update

__all__ = ["MAML", "maml_update"]
