"""Files that are never half-written, and run directories that one process owns at a time.

Every file a run writes goes through :func:`write_bytes`: the data go to a temporary file
with a name of its own (process id and a random tag, so concurrent writers never share
one) beside the target, and a rename puts it in place. A crash, a full disk or Ctrl-C
leaves either the old file, the new file, or nothing, never a truncated one; the
temporary file is removed when the write fails in this process, and a stale one left by a
killed process is removed by :func:`remove_stale_temporaries` (run under the lock).

:class:`DirectoryLock` takes an exclusive, non-blocking ``flock`` on ``<dir>/.lock``, so a
second process that tries to write into the same run directory gets one line naming the
process that holds it. The lock goes away with the process, however it ends, and
releasing it removes ``.lock``. A ``.lock`` that is a symbolic link, a hard link or not a
regular file is refused, never followed (run folders are shared: it could point at any
file the user can write).

The command layer shared by every command that writes a folder of outputs
(``ldpsim compose``, ``reproduce``, ``recommend``; ``ldpsim run`` keeps what is complete
instead and says how to resume) is :class:`OutputFolder`: it checks the folder before any
work (a file, a non-empty folder without ``force``, a place that cannot be written: one
line naming the option), has the command write into a temporary folder, and puts the
files in place only at the end, all at once; an error or Ctrl-C removes the temporary
folder and the parents made for it, so nothing is left half-made. :func:`new_folder` names
default folders by their UTC time, so that a rerun never replaces an earlier one.

Worker processes, which leave Ctrl-C to the parent, are :mod:`ldpsim._pool`'s.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shlex
import shutil
import signal
import stat
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterator, Literal

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
        while True:
            fd = self._open(path)
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
            # a holder releasing the lock removes .lock: if it did so between our open and our
            # flock, the lock is on a file no longer in the folder, so take the one there is now
            try:
                if os.path.samestat(os.fstat(fd), os.lstat(path)):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the lock holds all the same, only the pid is not shown
            pass
        self._fd = fd
        return self

    def _open(self, path: Path) -> int:
        """``.lock`` opened without following a link (a run folder may come from someone
        else: a ``.lock`` pointing elsewhere must not make us write there), and only if it
        is a plain file of its own; anything else is one line."""
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO: no wait
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            what = {errno.ELOOP: "a symbolic link", errno.EISDIR: "a folder"}.get(exc.errno or 0)
            if what is None and os.path.islink(path):
                what = "a symbolic link"
            if what is None:
                raise
            raise self._not_plain(what) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise self._not_plain("a hard link to another file" if stat.S_ISREG(info.st_mode) else "not a regular file")
        return fd

    def _not_plain(self, what: str) -> LdpSimError:
        return LdpSimError(
            f"{self.option}: got {str(self.directory)!r}, expected a folder whose {LOCK_NAME} is a plain "
            f"file (it is {what}; remove it)"
        )

    def release(self) -> None:
        """Remove ``.lock`` (while still holding it, and only if it is still our file) and
        release the lock: a finished command leaves no ``.lock`` behind."""
        if self._fd is not None:
            path = self.directory / LOCK_NAME
            try:
                if os.path.samestat(os.fstat(self._fd), os.lstat(path)):
                    os.unlink(path)
            except OSError:  # gone already, or a folder we cannot write: the lock is released all the same
                pass
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


@contextmanager
def open_input(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """``path`` opened for reading (binary). Paths are literal everywhere in ldpsim: a
    leading ``~`` is a folder named ``~`` (the shell expands ``~``; ldpsim never does) and
    no path is a URL. Libraries that read a path string their own way (pandas expands
    ``~`` and fetches URLs, from a Path as well) get this file object, never the path."""
    with open(Path(os.fspath(path)), "rb") as f:
        yield f


def shell_word(path: str | os.PathLike[str]) -> str:
    """``path`` as one word of a command line to paste into a shell (quoted when it has
    to be: ``'~/my run'``), for the "resume with: ..." lines."""
    return shlex.quote(os.fspath(path))


def describe_os_error(exc: OSError) -> str:
    """``strerror`` of an OSError, or its text when it has none."""
    return exc.strerror or str(exc)


# ----------------------------------------------------------------------------- output folders
#: errno values of a write that mean "this place cannot take the files"; other OSErrors propagate.
_WRITE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EFBIG,
    errno.EIO,
    errno.ENOTDIR,
}
_TEMPORARY = re.compile(r"^\..*\.\d+\.[0-9a-f]{8}" + re.escape(TMP_SUFFIX) + r"$", re.S)
#: Output folders put in place by this process: (how many, the last one). The command line
#: reads it to say, after Ctrl-C, whether anything was written.
_put_in_place: list[Any] = [0, None]


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a name :func:`temporary_name` gives (left behind only by a killed process)."""
    return bool(_TEMPORARY.match(name))


def new_folder(parent: str | Path, suffix: str = "") -> Path:
    """``parent/<UTC time><suffix>`` (``20261202T072400Z``), with ``-2``, ``-3``, ... added
    if that exists already: a default output folder, new for every run of a command."""
    parent = Path(parent)
    stem = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + suffix
    return _free_name(parent / stem)


def _free_name(path: Path) -> Path:
    out, n = path, 2
    while _lexists(out):
        out, n = path.with_name(f"{path.name}-{n}"), n + 1
    return out


def _lexists(path: Path) -> bool:
    try:
        os.lstat(path)
        return True
    except OSError:  # missing, or not reachable (then making it fails with the reason)
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _unwritable(option: str, path: Path, exc: OSError) -> str:
    return f"{option}: got {str(path)!r}, expected a folder we can write ({describe_os_error(exc)})"


def _not_a_directory() -> OSError:
    return OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))


def _check_kind(out: Path, force: bool, option: str, hint: str) -> None:
    """A file, or a non-empty folder without ``force``: one line naming ``option``."""
    if _lexists(out) and not _is_dir(out):
        raise LdpSimError(f"{option}: got {str(out)!r}, expected a folder (it is a file)")
    if not force and _is_dir(out):
        try:
            used = any(not is_temporary(p.name) for p in out.iterdir())
        except OSError as exc:
            raise LdpSimError(_unwritable(option, out, exc)) from None
        if used:
            raise LdpSimError(f"{option}: got {str(out)!r}, expected a new or empty folder ({hint})")


def _nearest_existing(path: Path) -> Path:
    for p in (path, *path.parents):
        if _lexists(p):
            return p
    return Path(".")


FORCE_HINT = "use --force to replace its files"


def check_output_folder(
    path: str | Path, force: bool = False, option: str = "--out", *, hint: str = FORCE_HINT
) -> Path:
    """Refuse, before any work, an output folder that is a file, that is not new or empty
    (unless ``force``; ``hint`` says what to do instead) or that cannot be written: one line
    naming ``option``. Writing is tried for real (a temporary folder is made where the files
    would go, and removed), so a read-only file system or a path under a file is caught
    whoever runs the command, root included."""
    out = Path(path)
    _check_kind(out, force, option, hint)
    anchor = _nearest_existing(out)
    try:
        if not _is_dir(anchor):
            raise _not_a_directory()
        probe = temporary_name(anchor / (out.name or "out"))
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise LdpSimError(_unwritable(option, out, exc)) from None
    return out


@contextmanager
def sigint_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back until the block ends, when it arrives as usual: for a few
    steps that must all happen or none (putting files in place, starting worker processes).
    Only in the main thread, where Python handles signals, on systems with ``pthread_sigmask``."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class OutputFolder:
    """A command's output folder, made whole at the end or not at all.

    ``with OutputFolder(path, force=..., option="--out") as folder:`` checks the folder
    first (as :func:`check_output_folder`) and makes a temporary folder, ``folder.work``, for
    the command to write into: beside ``path`` when ``path`` is new, inside it when it is an
    existing folder (empty, or any with ``force``). When the block ends normally the files
    are put in place, with Ctrl-C held back meanwhile: a new folder is one rename; in an
    existing folder each file replaces the one of the same name and other files are left
    as they are. ``folder.files`` then lists what was written (``folder.final(p)`` maps a
    path under ``work`` to its place). When the block raises (an error, Ctrl-C), the
    temporary folder and any parent folders made for it are removed, and an OSError of
    writing (a full disk, a read-only file system) becomes one line naming ``option``.

    ``fresh=True`` marks a default folder from :func:`new_folder`: should another process
    take that name meanwhile, the next free name is used instead.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        force: bool = False,
        option: str = "--out",
        fresh: bool = False,
        hint: str = FORCE_HINT,
    ) -> None:
        self.path = Path(path)
        self.force, self.option, self.fresh, self.hint = force, option, fresh, hint
        self.work: Path | None = None
        self.files: list[Path] = []
        self.committed = False
        self._staging: Path | None = None  # the work folder, remembered for final()
        self._inside = False
        self._made: list[Path] = []  # parent folders made for the work folder, deepest first

    @classmethod
    def of(
        cls,
        out: str | os.PathLike[str] | None,
        default: str | Path,
        *,
        force: bool = False,
        suffix: str = "",
        option: str = "--out",
    ) -> "OutputFolder":
        """``out`` as given, or when it is None a new folder ``default/<UTC time><suffix>``
        (:func:`new_folder`): the output folder of a command with an ``--out`` option."""
        if out is None:
            return cls(new_folder(default, suffix), option=option, fresh=True)
        return cls(out, force=force, option=option)

    # -- the three steps -------------------------------------------------------------
    def open(self) -> "OutputFolder":
        out = self.path
        _check_kind(out, self.force, self.option, self.hint)
        try:
            if _is_dir(out):
                self._inside = True
                self.work = temporary_name(Path.cwd() / out / "ldpsim-output")
            else:
                missing, p = [], out.parent
                while not _lexists(p) and p != p.parent:
                    missing.append(p)
                    p = p.parent
                if not _is_dir(p):
                    raise _not_a_directory()
                for d in reversed(missing):
                    try:
                        d.mkdir()
                    except FileExistsError:  # another process was quicker: not ours to remove
                        continue
                    self._made.insert(0, d)
                # absolute, so that no library reads a leading "~" of it as the home folder
                self.work = temporary_name(Path.cwd() / out)
            self.work.mkdir()
            self._staging = self.work
        except OSError as exc:
            self.discard()
            raise LdpSimError(_unwritable(self.option, out, exc)) from None
        except BaseException:  # Ctrl-C while making the folders: nothing may be left
            self.discard()
            raise
        return self

    def commit(self) -> list[Path]:
        """Put the files in place (see the class); returns them."""
        assert self.work is not None, "open() first"
        try:
            with sigint_held():
                names = sorted(p.name for p in self.work.iterdir())
                if self._inside:
                    self._replace_files(self.path, names)
                else:
                    self._rename_into_place()
                self.files = [self.path / n for n in names]
                self.committed = True
                self.work = None
                self._made = []
                _put_in_place[0] += 1
                _put_in_place[1] = self.path
        except OSError as exc:
            self.discard()
            raise LdpSimError(
                f"{self.option}: cannot write in {str(self.path)!r} ({describe_os_error(exc)}); nothing was written"
            ) from None
        except BaseException:
            self.discard()
            raise
        return self.files

    def discard(self) -> None:
        """Remove the temporary folder and the parent folders made for it (if still empty),
        with a second Ctrl-C held back until that is done."""
        with sigint_held():
            if self.work is not None:
                shutil.rmtree(self.work, ignore_errors=True)
                self.work = None
            for d in self._made:
                try:
                    d.rmdir()
                except OSError:
                    break
            self._made = []

    def final(self, path: str | Path) -> Path:
        """Where a file written as ``path`` (under ``work``, or already final) ends up."""
        path = Path(path)
        return self.path / path.name if self._staging is not None and path.parent == self._staging else path

    # -- the with statement ----------------------------------------------------------
    def __enter__(self) -> "OutputFolder":
        return self.open()

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None:
            self.commit()
            return False
        work = self.work
        self.discard()
        if isinstance(exc, OSError) and _writing_error(exc, work):
            raise LdpSimError(
                f"{self.option}: cannot write in {str(self.path)!r} ({describe_os_error(exc)}); nothing was written"
            ) from None
        return False

    # -- helpers ---------------------------------------------------------------------
    def _rename_into_place(self) -> None:
        assert self.work is not None
        target = self.path
        while True:
            try:
                os.rename(self.work, target)  # replaces an empty folder made meanwhile, never a used one
                break
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                    raise
                if not _is_dir(target):
                    raise LdpSimError(f"{self.option}: got {str(target)!r}, expected a folder (it is a file)") from None
                if self.fresh:  # a default name another process took meanwhile: the next one
                    target = _free_name(target)
                    continue
                if not self.force:
                    raise LdpSimError(
                        f"{self.option}: got {str(target)!r}, expected a new or empty folder "
                        f"(another process wrote into it meanwhile; {self.hint})"
                    ) from None
                self._replace_files(target, sorted(p.name for p in self.work.iterdir()))
                break
        self.path = target

    def _replace_files(self, target: Path, names: list[str]) -> None:
        """Move each of ``names`` from the work folder to ``target``, replacing what has that name."""
        assert self.work is not None
        work = self.work
        for name in names:
            dest = target / name
            if _is_dir(dest) and not dest.is_symlink():  # a folder cannot be replaced by a rename: move it aside
                os.rename(dest, temporary_name(work / name))
            os.replace(work / name, dest)
        shutil.rmtree(work, ignore_errors=True)


def _writing_error(exc: OSError, work: Path | None) -> bool:
    """Whether ``exc`` is a failure to write the outputs (not, say, a missing input file)."""
    if work is not None:
        for name in (exc.filename, exc.filename2):
            if name is not None and Path(os.fsdecode(name)).is_relative_to(work):
                return True
    return exc.errno in _WRITE_ERRNOS and exc.filename is None


def put_in_place_count() -> int:
    """How many output folders this process has put in place (see :func:`put_in_place_since`)."""
    return int(_put_in_place[0])


def put_in_place_since(count: int) -> Path | None:
    """The last output folder put in place since :func:`put_in_place_count` returned ``count``."""
    return _put_in_place[1] if _put_in_place[0] > count else None
