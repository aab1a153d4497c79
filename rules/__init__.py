"""The rules. Each module holds one rule; ``ALL_RULES`` lists them in code order."""

from gradguard.rules.base import Rule
from gradguard.rules.claims import SavedWrite
from gradguard.rules.gg101_leaf_inplace import LeafInplace
from gradguard.rules.gg102_leaf_view_inplace import LeafViewInplace
from gradguard.rules.gg103_non_leaf_requires_grad import NonLeafRequiresGrad
from gradguard.rules.gg104_out_argument_requires_grad import OutArgumentRequiresGrad
from gradguard.rules.gg105_deepcopy_non_leaf import DeepcopyNonLeafRule
from gradguard.rules.gg201_saved_tensor_inplace import SavedTensorInplace
from gradguard.rules.gg202_parameter_update_before_backward import ParameterUpdateBeforeBackward
from gradguard.rules.gg203_multi_view_inplace import MultiViewInplace
from gradguard.rules.gg204_function_forward_writes_input import FunctionForwardWritesInput
from gradguard.rules.gg205_function_view_output_inplace import FunctionViewOutputInplace
from gradguard.rules.gg206_function_saved_tensor_inplace import FunctionSavedTensorInplace
from gradguard.rules.gg207_backward_through_freed_graph import BackwardThroughFreedGraph
from gradguard.rules.gg301_data_write_to_saved import DataWriteToSaved
from gradguard.rules.gg302_data_write import DataWrite
from gradguard.rules.gg303_detach_alias_write import DetachAliasWrite
from gradguard.rules.gg304_backward_without_grad import BackwardWithoutGradRule
from gradguard.rules.gg305_non_leaf_grad import NonLeafGrad
from gradguard.rules.gg306_detach_inplace_view import DetachInplaceView
from gradguard.rules.gg307_detached_loss_term import DetachedLossTerm
from gradguard.rules.gg308_legacy_variable import LegacyVariableRule
from gradguard.rules.gg309_detach_alias_read_after_write import DetachAliasReadAfterWrite
from gradguard.rules.gg310_tensor_copy_cuts_graph import TensorCopyCutsGraph
from gradguard.rules.gg311_gradient_cut_off import GradientCutOffRule
from gradguard.rules.gg900_unused_noqa import UnusedNoqa

ALL_RULES: tuple[type[Rule], ...] = (
    LeafInplace,
    LeafViewInplace,
    NonLeafRequiresGrad,
    OutArgumentRequiresGrad,
    DeepcopyNonLeafRule,
    SavedTensorInplace,
    ParameterUpdateBeforeBackward,
    MultiViewInplace,
    FunctionForwardWritesInput,
    FunctionViewOutputInplace,
    FunctionSavedTensorInplace,
    BackwardThroughFreedGraph,
    DataWriteToSaved,
    DataWrite,
    DetachAliasWrite,
    BackwardWithoutGradRule,
    NonLeafGrad,
    DetachInplaceView,
    DetachedLossTerm,
    LegacyVariableRule,
    DetachAliasReadAfterWrite,
    TensorCopyCutsGraph,
    GradientCutOffRule,
    UnusedNoqa,
)

# The rules that report writes into a saved tensor, in precedence order: a write is
# reported by the first whose ``claims`` hold (``rules/claims.py``).
SAVED_WRITE_CLAIMANTS: tuple[type[Rule], ...] = (
    DetachInplaceView,  # detach_() of a saved input
    DataWriteToSaved,  # a write through .data
    FunctionForwardWritesInput,  # a write inside a custom Function's forward
    FunctionSavedTensorInplace,  # into what ctx.save_for_backward saved
    ParameterUpdateBeforeBackward,  # a parameter update
    SavedTensorInplace,  # any other write
)


def claimant(write: SavedWrite) -> str:
    """The code of the one rule that reports ``write``."""
    return next(rule.code for rule in SAVED_WRITE_CLAIMANTS if rule.claims.holds(write))


__all__ = ["ALL_RULES", "SAVED_WRITE_CLAIMANTS", "Rule", "SavedWrite", "claimant"]
