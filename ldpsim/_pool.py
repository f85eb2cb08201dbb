"""Worker processes that leave Ctrl-C to the parent.

:func:`start_pool` starts a process pool whose workers ignore Ctrl-C, and :func:`stop_pool`
ends one at once (Ctrl-C, an error): the parent terminates its workers, so no worker
prints a traceback and nothing keeps running. :func:`pool_map` maps a function over them
(or in this process, with one worker), in order, and advances the current progress bar as
each item finishes; inside :func:`executor_scope` its items go to the given executor
instead (a Dask cluster's: ``ldpsim reproduce --scheduler``).

Split from :mod:`ldpsim._files` (atomic files and output folders), whose
:func:`~ldpsim._files.sigint_held` holds Ctrl-C back while the workers start.
"""

from __future__ import annotations

import signal
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, Sequence

from ldpsim._files import sigint_held
from ldpsim._progress import advance
from ldpsim.errors import LdpSimError


def _leave_sigint_to_parent() -> None:
    """Initializer of worker processes: Ctrl-C is the parent's, which stops them (no
    traceback from every worker). They start with SIGINT held back (:func:`start_pool`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers ignore Ctrl-C (the parent stops them with
    :func:`stop_pool`). Submit to it under :func:`sigint_held`: workers are started by the
    first submissions, and a Ctrl-C at that moment must not reach one before it ignores it."""
    return ProcessPoolExecutor(max_workers=workers, initializer=_leave_sigint_to_parent)


def stop_pool(executor: Executor, timeout: float = 1.5) -> None:
    """End a pool at once (Ctrl-C, an error): cancel what is queued and, for a local process
    pool, terminate its workers and wait (at most ``timeout`` s) until the pool has reaped
    them. Futures are cancelled only by the pool itself here (a future cancelled from
    outside makes Python 3.11's pool fail with InvalidStateError in its own thread once a
    worker is terminated)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.terminate()
        except (OSError, ValueError, AttributeError):  # already gone
            pass
    if manager is not None:
        manager.join(timeout)


#: An executor every :func:`pool_map` in the block uses instead of its own pool (a Dask
#: cluster's: ``ldpsim reproduce --scheduler``); set by :func:`executor_scope`.
_SCOPED_EXECUTOR: ContextVar[Any] = ContextVar("ldpsim_scoped_executor", default=None)


@contextmanager
def executor_scope(executor: Any) -> Iterator[None]:
    """Make ``executor`` (a :class:`concurrent.futures.Executor`, e.g. a Dask cluster's)
    the one every :func:`pool_map` in the block submits to, whatever its ``workers``."""
    token = _SCOPED_EXECUTOR.set(executor)
    try:
        yield
    finally:
        _SCOPED_EXECUTOR.reset(token)


def pool_map(
    fn: Callable[..., Any], *iterables: Iterable[Any], workers: int, ticks: Sequence[float] | None = None
) -> list[Any]:
    """``list(map(fn, *iterables))`` over ``workers`` processes (in this process when 1), in
    order; Ctrl-C or an error in ``fn`` stops every worker at once. Inside
    :func:`executor_scope` the items go to that executor instead (a cluster), still in order.

    The current progress bar (:mod:`ldpsim._progress`) advances as each item finishes, in
    this process (with a pool, as the workers' results come back, in whatever order): by
    ``ticks[i]`` for item i (the items' expected costs), by 1 each without ``ticks``."""
    args_list = list(zip(*iterables))
    if ticks is not None and len(ticks) != len(args_list):
        raise LdpSimError(f"ticks: got {len(ticks)} numbers, expected one per item ({len(args_list)})")

    def tick(i: int) -> float:
        return 1 if ticks is None else ticks[i]

    scoped = _SCOPED_EXECUTOR.get()
    if scoped is not None and args_list:
        futures = [scoped.submit(fn, *args) for args in args_list]
        try:
            index = {f: i for i, f in enumerate(futures)}
            for f in as_completed(futures):
                f.result()
                advance(tick(index[f]))
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()  # nothing left after an error or Ctrl-C (a no-op for finished ones)
    if workers <= 1:
        out = []
        for i, args in enumerate(args_list):
            out.append(fn(*args))
            advance(tick(i))
        return out

    pool = start_pool(workers)
    try:
        with sigint_held():
            futures = [pool.submit(fn, *args) for args in args_list]
        index = {f: i for i, f in enumerate(futures)}
        for f in as_completed(futures):
            f.result()  # an error in fn stops the pool as soon as it comes back
            advance(tick(index[f]))
        out = [f.result() for f in futures]
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return out
