"""gradguard: find the in-place operations and ``.data`` writes that break autograd."""

from gradguard.checker import check_source
from gradguard.findings import Finding

__all__ = ["Finding", "check_source"]
__version__ = "0.1.0"
