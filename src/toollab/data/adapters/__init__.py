"""Built-in dataset adapters (importing this package registers them)."""

from toollab.data.adapters import (
    alpha_umi,
    bfcl,
    bfcl_multi_turn,
    deer,
    native,
    seal_tools,
    tooleyes,
)

__all__ = ["alpha_umi", "bfcl", "bfcl_multi_turn", "deer", "native", "seal_tools", "tooleyes"]
