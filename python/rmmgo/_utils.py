"""Small helpers: byte-size parsing and size_t arguments."""

import numbers
from operator import index as _index

__all__ = ["parse_bytes", "as_size_t", "SIZE_MAX"]

SIZE_MAX = (1 << 64) - 1


def as_size_t(value, name="size"):
    """value as a C size_t, checked as RMM's Cython signatures check it.

    Not an integer: TypeError. Negative, or above 2**64 - 1: OverflowError,
    never a silent wrap-around to a huge or small size.
    """
    if value.__class__ is not int:
        if isinstance(value, bool):
            raise TypeError("%s must be an integer, not bool" % name)
        try:
            value = _index(value)
        except TypeError:
            raise TypeError("%s must be an integer, not %s" % (name, type(value).__name__)) from None
    if value < 0:
        raise OverflowError("%s: can't convert negative value %d to size_t" % (name, value))
    if value > SIZE_MAX:
        raise OverflowError("%s: value %d too large to convert to size_t" % (name, value))
    return value

_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "pib": 1024**5,
}


def parse_bytes(s):
    """A size in bytes from an int or a string such as "1GiB", "512 MB" or "2e3".

    A number with an optional, case-insensitive unit: B; kB, MB, GB, TB, PB
    (powers of 1000); KiB, MiB, GiB, TiB, PiB (powers of 1024). As RMM's
    parse_bytes: "2k" is not a unit and raises ValueError.
    """
    if isinstance(s, bool):
        raise TypeError("a size cannot be a bool")
    if isinstance(s, numbers.Integral):
        return int(s)
    if isinstance(s, numbers.Real):
        if s != int(s):
            raise ValueError("Could not parse %r as a whole number of bytes" % (s,))
        return int(s)
    if not isinstance(s, str):
        raise TypeError("a size must be an int or a str, not %s" % type(s).__name__)
    text = s.replace(" ", "").replace("_", "")
    i = len(text)
    while i > 0 and text[i - 1].isalpha():
        i -= 1
    number, unit = text[:i], text[i:]
    try:
        mult = _BYTE_UNITS[unit.lower()]
        value = (int(number) if number.isdigit() else float(number)) if number else None
    except (KeyError, ValueError):
        value = None
    if value is None or value < 0:
        raise ValueError("Could not parse %r as a byte size (e.g. 1024, '1GiB', '500 MB')" % (s,))
    n = value * mult
    if n != int(n):
        raise ValueError("Could not parse %r as a whole number of bytes" % (s,))
    return int(n)
