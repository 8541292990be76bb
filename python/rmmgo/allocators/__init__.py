"""Allocators that route CuPy, Numba and PyTorch allocations through rmmgo.

Each submodule imports its framework lazily: importing ``rmmgo`` never
imports CuPy, Numba or PyTorch.
"""
