"""BinningMemoryResource (RMM's binning_memory_resource)."""

from .._bindings import ResourceKind
from .._utils import as_size_t, parse_bytes
from ._base import UpstreamResourceAdaptor, _handle_of
from ._handles import _kind, _lib


@_kind(ResourceKind.BINNING)
class BinningMemoryResource(UpstreamResourceAdaptor):
    """Bins of resources by size; larger requests go to the upstream.

    With exponents, fixed-size bins 2**min_size_exponent .. 2**max_size_exponent
    are made (-1, -1: none; add them with add_bin).
    """

    def __init__(self, upstream_mr, min_size_exponent=-1, max_size_exponent=-1):
        self._bin_mrs = []
        self._init_adaptor(
            upstream_mr,
            min_size_exponent=int(min_size_exponent),
            max_size_exponent=int(max_size_exponent),
        )

    def add_bin(self, allocation_size, bin_resource=None):
        """Serve allocations up to allocation_size from bin_resource (None: a new fixed-size bin).

        Not safe while other threads allocate from this resource.
        """
        bh = None if bin_resource is None else _handle_of(bin_resource, "bin_resource")
        _lib.rmm_binning_add_bin(self._handle, as_size_t(parse_bytes(allocation_size), "allocation_size"), bh)
        if bin_resource is not None:
            self._bin_mrs.append(bin_resource)

    @property
    def bin_mrs(self):
        """The bin resources given to add_bin (not the ones made for exponents)."""
        return list(getattr(self, "_bin_mrs", []))
