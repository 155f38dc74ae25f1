"""Built-in dataset adapters (importing this package registers them)."""

from toollab.data.adapters import bfcl, deer, native, seal_tools, tooleyes

__all__ = ["bfcl", "deer", "native", "seal_tools", "tooleyes"]
