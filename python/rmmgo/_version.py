"""The package version (the one place it is written) and the commit it was built from.

MAJOR must match librmmgo.so's major version. __git_commit__ is the commit
a wheel was built from (the file GIT_COMMIT, which `make wheel` writes into
the wheel), "" in a source tree, as RMM's.
"""

import os

__version__ = "0.1.0"
MAJOR = int(__version__.split(".")[0])


def _read_git_commit():
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "GIT_COMMIT")) as f:
            return f.read().strip()
    except OSError:
        return ""


__git_commit__ = _read_git_commit()

__all__ = ["__version__", "__git_commit__"]
