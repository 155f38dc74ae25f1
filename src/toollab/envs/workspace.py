"""ToolEyes scenario *application manipulation* (AM): a file workspace in a temporary directory.

Files really live on disk, in a temporary directory per environment (removed with it); every path is
confined to it (absolute paths, ``..`` and symbolic links that leave the workspace are refused).
The state is the workspace's content: ``{"file:notes/todo.txt": "...", "dir:reports": True}``,
plus what was read (``"read:notes/todo.txt"``, ``"list:notes"``).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, ClassVar

from toollab.envs.base import (
    BAD_ARGUMENTS,
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.schema import ToolCall
from toollab.tools.decorator import Param, tool
from toollab.tools.execution import CallResult

#: the files a fresh workspace holds (the seed picks the names in notes/ and the numbers)
BASE_FILES = {
    "readme.md": "# Project\nShared workspace.\n",
    "notes/todo.txt": "buy milk\ncall the bank\n",
    "notes/ideas.txt": "garden party\nnew bike\n",
    "reports/q1.csv": "month,sales\nJan,120\nFeb,135\nMar,150\n",
    "drafts/letter.txt": "Dear Sam,\nthanks for the visit.\n",
}


def _base_text(rel: str, seed: int) -> str:
    text = BASE_FILES[rel]
    return text.replace("120", str(100 + seed % 50)) if rel.endswith(".csv") else text


def confine(root: Path, path: str) -> Path:
    """``path`` inside ``root``, or :class:`EnvError` if it would leave it."""
    p = PurePosixPath(path.strip().replace("\\", "/"))
    if not str(p) or str(p) == ".":
        return root
    if p.is_absolute() or ".." in p.parts:
        raise EnvError(f"path {path!r} leaves the workspace", BAD_ARGUMENTS)
    full = root.joinpath(*p.parts)
    real = full.resolve()
    if real != root and root not in real.parents:
        raise EnvError(f"path {path!r} leaves the workspace", BAD_ARGUMENTS)
    return full


@register_env("workspace")
class WorkspaceEnv(Environment):
    description = "Manage files in a workspace: create, append, read, move, copy, delete, edit."
    scenario = "AM"
    #: the split policy of its generated data (goal templates: :mod:`toollab.envs.tasks.workspace`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "workspace",
        also_serves=frozenset({"todo", "shopping_list"}),
        inverses=(("create_file", "delete_file"),),
        lends_goals=True,
    )

    def __init__(self) -> None:
        self._dir: Path | None = None
        #: the base files' text as last written (None: nothing written yet)
        self._written: dict[str, str] | None = None
        self._touched: set[str] = set()
        super().__init__()

    @property
    def _root(self) -> Path:
        """The workspace directory, made on first use and removed with the environment."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="toollab-ws-")).resolve()
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self._dir), True)
        return self._dir

    def reset(self, seed: int = 0) -> None:
        # the files are brought in line lazily, on the first call or state() after a reset
        self.seed = seed
        self._synced = False
        self.reads: dict[str, Any] = {}

    def _sync(self) -> None:
        if self._synced:
            return
        self._synced = True
        seed = self.seed
        base_dirs = {
            p.as_posix() for rel in BASE_FILES for p in PurePosixPath(rel).parents if str(p) != "."
        }
        # remove what a previous program added (cheaper than a fresh directory per reset)
        for p in sorted(self._root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            rel = p.relative_to(self._root).as_posix()
            if p.is_symlink() or (p.is_file() and rel not in BASE_FILES):
                p.unlink()
            elif p.is_dir() and rel not in base_dirs:
                shutil.rmtree(p, ignore_errors=True)
        # rewrite only the base files a program touched (or whose seeded content differs)
        fresh = self._written is None
        written = self._written or {}
        for rel in BASE_FILES:
            text = _base_text(rel, seed)
            if (
                fresh
                or rel in self._touched
                or written.get(rel) != text
                or not (self._root / rel).is_file()
            ):
                f = self._root / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text, encoding="utf-8")
        self._written = {rel: _base_text(rel, seed) for rel in BASE_FILES}
        self._touched = set()

    @property
    def root(self) -> Path:
        self._sync()
        return self._root

    def call_at(self, calls: Sequence[ToolCall], index: int, done: Sequence[CallResult]) -> Any:
        self._sync()
        return super().call_at(calls, index, done)

    def state(self) -> dict[str, Any]:
        self._sync()
        out: dict[str, Any] = {}
        for p in sorted(self._root.rglob("*")):
            rel = p.relative_to(self._root).as_posix()
            if p.is_dir():
                out[f"dir:{rel}"] = True
            else:
                out[f"file:{rel}"] = p.read_text(encoding="utf-8", errors="replace")
        out.update(self.reads)
        return out

    def _touch(self, f: Path) -> None:
        self._touched.add(f.relative_to(self._root).as_posix())

    def _file(self, path: str) -> Path:
        f = confine(self._root, path)
        if not f.is_file():
            raise EnvError(f"no file {path!r}", NOT_FOUND)
        return f

    @tool(returns=False)
    def create_file(self, path: str, content: str) -> str:
        """Create (or overwrite) a text file.

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        f = confine(self._root, path)
        if f.is_dir():
            raise EnvError(f"{path!r} is a directory", BAD_VALUE)
        f.parent.mkdir(parents=True, exist_ok=True)
        self._touch(f)
        f.write_text(content, encoding="utf-8")
        return "created"

    @tool(returns=False)
    def append_to_file(self, path: str, content: str) -> str:
        """Append text to a file (a newline is added).

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        f = self._file(path)
        text = f.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            text += "\n"
        self._touch(f)
        f.write_text(text + content + "\n", encoding="utf-8")
        return "appended"

    @tool(returns=False)
    def read_file(self, path: str) -> str:
        """Read a text file.

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        f = self._file(path)
        text = f.read_text(encoding="utf-8")
        self.reads[f"read:{f.relative_to(self._root).as_posix()}"] = text
        return text

    @tool(returns=False)
    def delete_file(self, path: str) -> str:
        """Delete a file.

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        f = self._file(path)
        self._touch(f)
        f.unlink()
        return "deleted"

    def _target(self, source: Path, destination: str) -> Path:
        dst = confine(self._root, destination)
        if dst.is_dir():
            dst = dst / source.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        return dst

    @tool(returns=False)
    def move_file(self, source: str, destination: str) -> str:
        """Move or rename a file."""
        src = self._file(source)
        self._touch(src)
        src.rename(self._target(src, destination))
        return "moved"

    @tool(returns=False)
    def copy_file(self, source: str, destination: str) -> str:
        """Copy a file."""
        src = self._file(source)
        shutil.copyfile(src, self._target(src, destination))
        return "copied"

    @tool(returns=False)
    def make_directory(self, path: str) -> str:
        """Create a directory.

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        d = confine(self._root, path)
        if d.exists():
            raise EnvError(f"{path!r} already exists", BAD_VALUE)
        d.mkdir(parents=True)
        return "created"

    @tool(returns=False)
    def list_directory(self, path: str = ".") -> list[str]:
        """List a directory."""
        d = confine(self._root, path)
        if not d.is_dir():
            raise EnvError(f"no directory {path!r}", NOT_FOUND)
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir())
        rel = d.relative_to(self._root).as_posix()
        self.reads[f"list:{rel}"] = names
        return names

    @tool(returns=False)
    def replace_in_file(self, path: str, old: Annotated[str, Param(minLength=1)], new: str) -> str:
        """Replace every occurrence of a text in a file.

        Args:
            path: Relative path, e.g. notes/todo.txt.
        """
        f = self._file(path)
        text = f.read_text(encoding="utf-8")
        if old not in text:
            raise EnvError(f"{old!r} does not occur in {path!r}", BAD_VALUE)
        self._touch(f)
        f.write_text(text.replace(old, new), encoding="utf-8")
        return "replaced"
