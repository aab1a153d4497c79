"""The rules. Each module holds one rule; ``ALL_RULES`` lists them in code order."""

from gradguard.rules.base import Rule
from gradguard.rules.gg101_leaf_inplace import LeafInplace
from gradguard.rules.gg102_leaf_view_inplace import LeafViewInplace
from gradguard.rules.gg201_saved_tensor_inplace import SavedTensorInplace
from gradguard.rules.gg202_parameter_update_before_backward import ParameterUpdateBeforeBackward
from gradguard.rules.gg203_multi_view_inplace import MultiViewInplace

ALL_RULES: tuple[type[Rule], ...] = (
    LeafInplace,
    LeafViewInplace,
    SavedTensorInplace,
    ParameterUpdateBeforeBackward,
    MultiViewInplace,
)

__all__ = ["ALL_RULES", "Rule"]
