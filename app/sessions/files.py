"""Files in a tree Patchwarden did not write, touched without following a symlink
anywhere on the way (host code reads and writes untrusted trees only through these),
and an exclusive lock across processes."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path


@contextlib.asynccontextmanager
async def file_lock(path: Path):  # type: ignore[no-untyped-def]
    """An exclusive ``flock`` across processes (taken in a thread, never on the loop)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def confined_parts(relative: str) -> tuple[str, ...] | None:
    """The components of a path relative to a tree, or None if it could leave it."""
    if "\0" in relative:
        return None  # os.open would raise ValueError, not OSError
    parts = Path(relative).parts
    if not parts or any(p in ("..", "") for p in parts) or Path(relative).is_absolute():
        return None
    return parts


@contextlib.contextmanager
def _confined_dir(tree: Path, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``tree/parts...``, walked without following any symlink;
    with ``create``, missing directories are made (0755)."""
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def read_confined(tree: Path, relative: str, *, limit: int = 1024 * 1024) -> bytes | None:
    """Bytes of ``tree/relative`` if it is a regular file inside ``tree`` (no symlink
    anywhere on the way), else None. Host code reads untrusted trees only through this."""
    parts = confined_parts(relative)
    if parts is None:
        return None
    try:
        with _confined_dir(tree, parts[:-1]) as fd:
            leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(leaf).st_mode):
            return None
        return os.read(leaf, limit)
    finally:
        os.close(leaf)


def read_text_confined(tree: Path, relative: str, *, limit: int) -> str | None:
    """The whole of ``tree/relative`` as UTF-8 text (its own line endings kept), read as
    :func:`read_confined` does; None when it is not such a file, longer than ``limit``
    bytes (never a file cut short) or not UTF-8."""
    data = read_confined(tree, relative, limit=limit + 1)
    if data is None or len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_confined(
    tree: Path, relative: str, data: bytes, *, mode: int = 0o644, exclusive: bool = False
) -> None:
    """Write ``tree/relative`` (a regular file, created with its directories if need be)
    without following a symlink anywhere; raises OSError otherwise. With ``exclusive``
    the file must not exist yet (FileExistsError), a dangling symlink included."""
    parts = confined_parts(relative)
    if parts is None:
        raise OSError(f"{relative!r} is not a path inside the tree")
    with _confined_dir(tree, parts[:-1], create=True) as fd:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        flags |= os.O_EXCL if exclusive else os.O_TRUNC
        leaf = os.open(parts[-1], flags, mode, dir_fd=fd)
        try:
            if not stat.S_ISREG(os.fstat(leaf).st_mode):
                raise OSError(f"{relative} is not a regular file")
            view = memoryview(data)
            while view:
                view = view[os.write(leaf, view) :]
        finally:
            os.close(leaf)


def remove_confined(tree: Path, relative: str) -> None:
    """Delete ``tree/relative`` if there: a file or symlink itself (never a symlink's
    target), or a directory with everything in it (``rmtree`` on descriptors)."""
    parts = confined_parts(relative)
    if parts is None:
        return
    missing = contextlib.suppress(FileNotFoundError, NotADirectoryError)
    with missing, _confined_dir(tree, parts[:-1]) as fd:
        st = os.lstat(parts[-1], dir_fd=fd)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(parts[-1], dir_fd=fd)
        else:
            os.unlink(parts[-1], dir_fd=fd)
