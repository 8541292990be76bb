"""Streams: owned streams, wrapping other libraries' streams, defaults, pools."""

import ctypes
import gc

import pytest

import rmmgo as rmm
from rmmgo.stream import CudaStreamFlags, CudaStreamPool, Stream


def test_new_stream_is_owned_and_usable():
    s = Stream()
    assert s.handle != 0 and not s.is_default()
    s.synchronize()
    buf = rmm.DeviceBuffer(size=100, stream=s)
    buf.copy_from_host(b"a" * 100, stream=s)
    assert buf.tobytes(stream=s) == b"a" * 100


def test_defaults():
    assert rmm.DEFAULT_STREAM.handle == 0 and rmm.DEFAULT_STREAM.is_default()
    assert rmm.LEGACY_DEFAULT_STREAM.handle == 1 and rmm.LEGACY_DEFAULT_STREAM.is_default()
    assert rmm.PER_THREAD_DEFAULT_STREAM.handle == 2 and not rmm.PER_THREAD_DEFAULT_STREAM.is_default()
    rmm.DEFAULT_STREAM.synchronize()


def test_wrapping_keeps_the_owner_alive():
    s = Stream()
    h = s.handle
    w = Stream(s)
    assert w == s and hash(w) == hash(s) and w.handle == h
    del s
    gc.collect()
    w.synchronize()  # still alive: w shares ownership


class Proto:
    def __init__(self, h):
        self.h = h

    def __cuda_stream__(self):
        return (0, self.h)


class CupyLike:
    def __init__(self, ptr):
        self.ptr = ptr


class TorchLike:
    def __init__(self, h):
        self.cuda_stream = h


class NumbaLike:
    def __init__(self, h):
        import ctypes

        self.handle = ctypes.c_void_p(h)


@pytest.mark.parametrize("cls", [Proto, CupyLike, TorchLike, NumbaLike])
def test_wrap_foreign_streams(cls):
    s = Stream()
    w = Stream(cls(s.handle))
    assert w == s
    assert w.__cuda_stream__() == (0, s.handle)
    assert Stream(cls(0)).is_default()


def test_raw_int_and_refusals():
    assert Stream(0) == rmm.DEFAULT_STREAM
    with pytest.raises(TypeError):
        Stream(object())
    with pytest.raises(TypeError):
        Stream("not a stream")
    Stream(flags=CudaStreamFlags.SYNC_DEFAULT).synchronize()
    Stream(flags=CudaStreamFlags.NON_BLOCKING).synchronize()
    with pytest.raises(ValueError):
        Stream(flags=7)
    with pytest.raises(ValueError, match="flags"):
        rmm._bindings.lib.rmm_stream_create_with_flags(ctypes.byref(ctypes.c_void_p()), 6)


def test_stream_pool():
    pool = CudaStreamPool(pool_size=3)
    got = [pool.get_stream() for _ in range(6)]
    assert got[:3] == got[3:] and len(set(got[:3])) == 3
    assert pool.get_pool_size() == 3 and pool.get_stream(4) == got[1]
    with pytest.raises(ValueError):
        CudaStreamPool(pool_size=0)
