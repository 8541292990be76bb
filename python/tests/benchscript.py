"""Loads a script of python/bench for the tests of its pure-Python parts:
from the source checkout, or from RMMGO_SOURCE_DIR (the GPU bundle, whose
wheel test runs a copy of these tests elsewhere); skips the calling test
module when the script is not there."""

import importlib.util
import os

import pytest


def load(relpath, name):
    """The module at python/bench/<relpath>, or a module-level skip."""
    src = os.environ.get("RMMGO_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    path = os.path.join(src, "python", "bench", relpath)
    if not os.path.exists(path):
        pytest.skip("python/bench/%s is not here (set RMMGO_SOURCE_DIR)" % relpath, allow_module_level=True)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
