"""PyTorch's pluggable CUDA allocator pointed at rmmgo.

    import torch
    from rmmgo.allocators.torch import rmm_torch_allocator
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

(before PyTorch allocates any CUDA memory). Allocations are served by each
device's current resource in librmmgo.so, through librmmgo_torch.so: a thin
C++ layer whose ``rmmgo_torch_allocate`` throws a C++ exception carrying the
library's message when an allocation fails. PyTorch lets that exception
through its pluggable allocator and turns it into a Python RuntimeError, so
running out of memory raises instead of crashing or handing out NULL.

``rmm_torch_allocator`` is None when PyTorch (with CUDA) is not available or
librmmgo_torch.so is missing (``make torch-shim`` builds it); then
``torch_allocator_error`` says why.
"""

from .. import _lib

__all__ = ["rmm_torch_allocator", "torch_shim_path", "torch_allocator_error"]

rmm_torch_allocator = None
torch_allocator_error = None


def torch_shim_path():
    """The path of librmmgo_torch.so (LibraryNotFoundError naming the places tried)."""
    return _lib.torch_shim_path()


try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError as exc:
    torch_allocator_error = "PyTorch with CUDAPluggableAllocator is not installed (%s)" % exc
else:
    from torch.cuda import is_available

    if not is_available():
        torch_allocator_error = "torch.cuda.is_available() is False"
    else:
        try:
            _lib.load()  # librmmgo.so first, so the shim binds to this copy
            _path = torch_shim_path()
        except _lib.LibraryNotFoundError as exc:
            torch_allocator_error = str(exc)
        else:
            rmm_torch_allocator = CUDAPluggableAllocator(
                _path, alloc_fn_name="rmmgo_torch_allocate", free_fn_name="rmmgo_torch_deallocate"
            )
            del _path
    del is_available
