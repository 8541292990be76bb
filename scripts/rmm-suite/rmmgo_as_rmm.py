"""A pytest plugin that runs RMM's own tests against rmmgo: `-p rmmgo_as_rmm`.

Loaded before any conftest or test module, it calls rmmgo.install_as_rmm(),
so that every ``import rmm`` in RMM's tests gets rmmgo. The report header
says which rmmgo, library and backend ran.
"""

import os

import rmmgo

rmmgo.install_as_rmm()


def pytest_report_header(config):
    return "rmm is rmmgo %s (commit %s) from %s, librmmgo.so %s at %s, backend %s" % (
        rmmgo.__version__,
        rmmgo.__git_commit__ or "unknown",
        os.path.dirname(rmmgo.__file__),
        rmmgo.library_version(),
        rmmgo.library_path(),
        rmmgo.backend(),
    )
