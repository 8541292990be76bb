"""RMM's ``rmm.pylibrmm.helper``: parse_bytes."""

from .._utils import parse_bytes

__all__ = ["parse_bytes"]
