"""Confining file reads to allowed folders (the agent tools and ``ragloom serve``).

A :class:`PathConfinement` holds the folders a caller may read. :meth:`~PathConfinement.locate`
checks a path a model sent (lexically and after resolving links) and
:meth:`~PathConfinement.open` opens a file by walking from the root's own
descriptor one component at a time with ``O_NOFOLLOW``, so that no symbolic link
is followed past the check: a file or folder swapped for a link between the
check and the read is refused, not read. The root itself is compared by device
and inode with what it was when the confinement was made.

While :func:`confined` is active (a context variable, so per thread and per
task), every file the built-in loaders open goes through :meth:`~PathConfinement.open`
(see :func:`ragloom.loaders.base.open_limited`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from ragloom.errors import LoaderError

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

_active: ContextVar[PathConfinement | None] = ContextVar("ragloom_confinement", default=None)


class ConfinementError(LoaderError, ValueError):
    """A path is outside the allowed folders, or reaching it would follow a link."""


class PathConfinement:
    """The folders a caller may read; paths are checked and opened without following links out."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]]):
        self.roots: list[tuple[str, int, int]] = []
        for root in roots:
            real = os.path.realpath(os.fspath(root))
            try:
                info = os.stat(real)
            except (OSError, ValueError) as exc:
                raise ConfinementError(f"allowed folder cannot be read: {exc}", source=os.fspath(root)) from None
            if not stat.S_ISDIR(info.st_mode):
                raise ConfinementError("allowed folder is not a directory", source=os.fspath(root))
            self.roots.append((real, info.st_dev, info.st_ino))

    def _root_of(self, path: str) -> tuple[str, int, int] | None:
        for root in self.roots:
            if path == root[0] or path.startswith(root[0].rstrip(os.sep) + os.sep):
                return root
        return None

    def locate(self, path: str | os.PathLike[str], base_dir: str | os.PathLike[str] | None = None) -> str:
        """The resolved absolute path of ``path`` if it lies under an allowed folder; ConfinementError otherwise."""
        text = os.fspath(path)
        if "\x00" in text:
            raise ConfinementError("path contains a NUL byte")
        text = os.path.expanduser(text)
        if not os.path.isabs(text):
            text = os.path.join(os.fspath(base_dir) if base_dir is not None else os.getcwd(), text)
        lexical = os.path.normpath(text)
        try:
            resolved = os.path.realpath(lexical)
        except (OSError, ValueError) as exc:
            raise ConfinementError(f"path cannot be resolved: {exc}", source=lexical) from None
        if self._root_of(lexical) is None or self._root_of(resolved) is None:
            raise ConfinementError("path is outside the folders this tool may read", source=lexical)
        return resolved

    def open(self, path: str) -> int:
        """A read-only descriptor of the regular file at ``path``, reached from its root without following any link."""
        if "\x00" in path:
            raise ConfinementError("path contains a NUL byte", source=path.replace("\x00", "\\0"))
        absolute = os.path.normpath(os.path.abspath(path))
        root = self._root_of(absolute)
        if root is None:
            raise ConfinementError("path is outside the folders this tool may read", source=path)
        parts = [part for part in absolute[len(root[0]) :].split(os.sep) if part]
        if not parts:
            raise LoaderError("is a directory, not a file", source=path)
        directory = _open_checked(root[0], _O_DIRECTORY, path)
        try:
            info = os.fstat(directory)
            if (info.st_dev, info.st_ino) != (root[1], root[2]):
                raise ConfinementError("allowed folder was replaced since the tool was made", source=path)
            for part in parts[:-1]:
                inner = _open_checked(part, _O_DIRECTORY | _O_NOFOLLOW, path, dir_fd=directory)
                os.close(directory)
                directory = inner
            return _open_checked(parts[-1], _O_NOFOLLOW | _O_NONBLOCK, path, dir_fd=directory)
        finally:
            os.close(directory)


def _open_checked(name: str, flags: int, source: str, *, dir_fd: int | None = None) -> int:
    """``os.open`` read-only with ``flags``; a link where none may be, or any OSError, becomes a LoaderError."""
    try:
        return os.open(name, os.O_RDONLY | _O_CLOEXEC | flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise LoaderError("file not found", source=source) from None
    except OSError as exc:
        link = dir_fd is not None and _is_link(name, dir_fd)
        if link:
            raise ConfinementError("reaching it would follow a symbolic link; links are not followed here", source=source) from None
        raise LoaderError(f"cannot open: {exc.strerror or exc}", source=source) from None


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def active() -> PathConfinement | None:
    """The confinement in force for this thread or task, if any."""
    return _active.get()


@contextlib.contextmanager
def confined(confinement: PathConfinement) -> Iterator[PathConfinement]:
    """Route every loader file open through ``confinement`` inside the ``with`` block."""
    token = _active.set(confinement)
    try:
        yield confinement
    finally:
        _active.reset(token)
