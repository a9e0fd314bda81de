"""The optional extra the socket plugins need (gRPC and protobuf), named once: the lazy entry
point (:mod:`.socket_directory`) and the plugins' module (:mod:`.socket_plugins`) both say how
to install it, and neither imports the other at module level."""

from __future__ import annotations

from typing import Final

__all__ = ["GRPC_EXTRA", "INSTALL_HINT"]

GRPC_EXTRA: Final = "reporter-grpc"
INSTALL_HINT: Final = f"pip install 'pyscheduler[{GRPC_EXTRA}]'"
