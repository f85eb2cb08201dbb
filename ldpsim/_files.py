"""Files that are never half-written, and run directories that one process owns at a time.

Every file a run writes goes through :func:`write_bytes`: the data go to a temporary file
with a name of its own (process id and a random tag, so concurrent writers never share
one) beside the target, and a rename puts it in place. A crash, a full disk or Ctrl-C
leaves either the old file, the new file, or nothing, never a truncated one; the
temporary file is removed when the write fails in this process, and a stale one left by a
killed process is removed by :func:`remove_stale_temporaries` (run under the lock).

:class:`DirectoryLock` takes an exclusive, non-blocking ``flock`` on ``<dir>/.lock``, so a
second process that tries to write into the same run directory gets one line naming the
process that holds it. The lock goes away with the process, however it ends.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from ldpsim.errors import LdpSimError

LOCK_NAME = ".lock"
TMP_SUFFIX = ".tmp"

try:  # POSIX; elsewhere runs are not locked (documented in docs/design)
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms we test
    fcntl = None  # type: ignore[assignment]


def temporary_name(path: Path) -> Path:
    """A hidden name beside ``path`` that no other writer uses."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")


@contextmanager
def atomic_writer(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """A file object whose contents replace ``path`` only when the block ends normally."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        with open(tmp, mode) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, then rename)."""
    with atomic_writer(path) as f:
        f.write(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def remove_stale_temporaries(directory: Path) -> None:
    """Remove temporary files left in ``directory`` (and one level below) by a killed
    process. Call it only while holding the directory's lock: no live writer then owns any."""
    for pattern in (f".*{TMP_SUFFIX}", f"*/.*{TMP_SUFFIX}"):
        for p in directory.glob(pattern):
            try:
                p.unlink()
            except OSError:
                pass


class DirectoryLock:
    """An exclusive lock on a directory for the life of a run (or until :meth:`release`)."""

    def __init__(self, directory: Path, option: str) -> None:
        self.directory = Path(directory)
        self.option = option  # the command-line option that named the directory, for messages
        self._fd: int | None = None

    def acquire(self) -> "DirectoryLock":
        if fcntl is None:  # pragma: no cover
            return self
        path = self.directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                who = f"pid {holder}" if holder else "another process"
                raise LdpSimError(
                    f"{self.option}: got {str(self.directory)!r}, expected a run directory no other process is "
                    f"writing (in use by {who})"
                ) from None
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the lock holds all the same, only the pid is not shown
            pass
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "DirectoryLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None


def describe_os_error(exc: OSError) -> str:
    """``strerror`` of an OSError, or its text when it has none."""
    return exc.strerror or str(exc)


def check_output_folder(path: str | Path, force: bool, option: str = "--out") -> Path:
    """Refuse, before any work, an output folder that is not new or empty (unless ``force``)
    or that cannot be created: one line naming ``option``."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise LdpSimError(f"{option}: got {str(out)!r}, expected a folder (it is a file)")
    if out.exists() and any(out.iterdir()) and not force:
        raise LdpSimError(f"{option}: got {str(out)!r}, expected a new or empty folder (use --force to replace its files)")
    parent = out if out.exists() else next((p for p in out.parents if p.exists()), Path("."))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LdpSimError(f"{option}: got {str(out)!r}, expected a folder that can be written ({str(parent)!r} cannot be)")
    return out


def write_output_folder(path: str | Path, files: dict[str, bytes], option: str = "--out") -> list[Path]:
    """Write ``files`` (name -> bytes) into ``path`` as a whole: into a temporary sibling
    folder first, then each file renamed into place, so Ctrl-C or a full disk leaves no
    half-made folder (a folder this call created is removed again on failure)."""
    import shutil

    out = Path(path)
    created = not out.exists()
    tmp = temporary_name(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        out.mkdir(exist_ok=True)
        written = []
        for name in files:
            os.replace(tmp / name, out / name)
            written.append(out / name)
        return written
    except BaseException as exc:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        if isinstance(exc, OSError):
            raise LdpSimError(f"{option}: cannot write in {str(out)!r} ({describe_os_error(exc)})") from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
