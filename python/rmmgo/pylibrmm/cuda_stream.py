"""RMM's deprecated ``rmm.pylibrmm.cuda_stream`` (removed from RMM in 26.06).

``CudaStream`` is a new owned stream (RMM's _OwningStream); use
``rmm.pylibrmm.stream.Stream`` and ``CudaStreamFlags`` instead.
"""

import warnings

from ..stream import CudaStreamFlags
from ..stream import _OwningStream as CudaStream

warnings.warn(
    "rmm.pylibrmm.cuda_stream is deprecated; use rmm.pylibrmm.stream.CudaStreamFlags "
    "for stream flags, and rmm.pylibrmm.stream.Stream for stream objects.",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["CudaStream", "CudaStreamFlags"]
