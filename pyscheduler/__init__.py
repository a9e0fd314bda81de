"""pyscheduler: a universal resource scheduler core in the style of Apache YuniKorn.

Python holds the domain objects and the policies; the hot paths (event ring buffer, string
interner, node ordering) are in Rust, in the native module ``pyscheduler._native``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pyscheduler")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
