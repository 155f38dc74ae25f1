"""How much a sandbox's workspace holds, measured against its quota (bytes and entries).

Run inside the confined process (:mod:`toollab.tools._zygote`) while a call runs and after it:
every entry under the workspace (files, directories, links, anything) counts once toward the
entry quota, and ``max(size, allocated blocks)`` of each toward the byte quota.  Symbolic links
are never followed.  The walk stops as soon as either quota is passed, so it costs at most the
quota's worth of entries.  A directory the walk cannot read is made readable by its owner (the
sandbox user owns everything a tool made) or, failing that, counts as over the quota: what cannot
be measured is not allowed.  Standard library only.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What the walk found (``entries`` and ``size`` stop growing once a quota is passed)."""

    entries: int
    size: int
    #: why the workspace is over its quota (``None``: within it)
    over: str | None = None


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB"


def measure(root: str, max_bytes: int, max_entries: int) -> Usage:
    """Walk ``root`` (not counted itself) until done or past a quota."""
    entries = size = 0
    pending = [root]
    while pending:
        top = pending.pop()
        try:
            with _open(top) as listing:
                for entry in listing:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while the walk ran
                    entries += 1
                    size += max(st.st_size if stat.S_ISREG(st.st_mode) else 0, st.st_blocks * 512)
                    if entries > max_entries:
                        return Usage(
                            entries, size, f"more than {max_entries:,} files and directories"
                        )
                    if size > max_bytes:
                        return Usage(entries, size, f"more than {_mb(max_bytes)}")
                    if stat.S_ISDIR(st.st_mode):
                        pending.append(entry.path)
        except OSError as exc:
            return Usage(entries, size, f"{top!r} cannot be measured ({exc.strerror or exc})")
    return Usage(entries, size)


def _open(path: str) -> os._ScandirIterator[str]:
    try:
        return os.scandir(path)
    except PermissionError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise
        os.chmod(path, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)  # its owner may always
        return os.scandir(path)
