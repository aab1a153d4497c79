"""The rules. Each module holds one rule; ``ALL_RULES`` lists them in code order."""

from gradguard.rules.base import Rule
from gradguard.rules.gg101_leaf_inplace import LeafInplace
from gradguard.rules.gg102_leaf_view_inplace import LeafViewInplace

ALL_RULES: tuple[type[Rule], ...] = (LeafInplace, LeafViewInplace)

__all__ = ["ALL_RULES", "Rule"]
