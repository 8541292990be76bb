"""The package version; MAJOR must match librmmgo.so's major version."""

__version__ = "0.1.0"
MAJOR = 0
