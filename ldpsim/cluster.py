"""Runs on a Dask cluster: ``--scheduler local:N`` or ``--scheduler ADDRESS``.

The run framework (:mod:`ldpsim.runs`) takes any :class:`concurrent.futures.Executor`;
this module turns a scheduler specification into one backed by Dask distributed (the
optional extra ``ldpsim[distributed]``), so the same scenario file runs on a laptop and on
a cluster with one option, with the same bytes: replication r is seeded by
``SeedSequence(seed, spawn_key=(r,))`` wherever it runs, and the parent writes every
replication's file as its result comes back.

- ``local:N``: a local cluster of N worker processes (one thread each), started for the
  run and closed after it;
- ``ADDRESS`` (``tcp://host:8786``, ``host:8786``): the scheduler of a running cluster
  (started by ``dask scheduler`` and ``dask worker``, dask-jobqueue, dask-kubernetes or a
  cloud service; docs/distributed.md).

Dask retries a task whose worker dies (``distributed.scheduler.allowed-failures``), and a
replication's result depends only on its index and the seed, so a retried replication
gives the same rows.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ldpsim.errors import LdpSimError, show

#: Workers a ``local:N`` cluster may start.
MAX_LOCAL_WORKERS = 256
#: Seconds to wait for the scheduler of an ``ADDRESS`` to answer.
CONNECT_TIMEOUT = 10.0
EXTRA = 'pip install "ldpsim[distributed]"'
FORM = "local:N (a local cluster of N worker processes) or a scheduler address such as tcp://host:8786"


@dataclass(frozen=True)
class Cluster:
    """A connected cluster: the executor to hand to a run, its number of workers (for
    grouping replications into tasks) and the address of Dask's dashboard (None if none)."""

    executor: Any
    workers: int
    dashboard: str | None
    spec: str
    client: Any = None  # the distributed.Client (for its scheduler's state; tests kill workers through it)


def parse(spec: object) -> tuple[str, int | str]:
    """``("local", N)`` or ``("address", ADDRESS)``; one line naming ``--scheduler`` otherwise."""
    if not isinstance(spec, str) or not spec.strip():
        raise LdpSimError(f"--scheduler: got {show(spec)}, expected {FORM}")
    spec = spec.strip()
    m = re.fullmatch(r"local:(\d+)", spec)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= MAX_LOCAL_WORKERS:
            raise LdpSimError(f"--scheduler: got {spec!r}, expected local:N with N from 1 to {MAX_LOCAL_WORKERS}")
        return "local", n
    if spec.startswith("local"):
        raise LdpSimError(f"--scheduler: got {spec!r}, expected local:N with N a number of workers (e.g. local:2)")
    if not re.fullmatch(r"(?:[a-z]+://)?[A-Za-z0-9_.\-\[\]:]+:\d+", spec):
        raise LdpSimError(f"--scheduler: got {spec!r}, expected {FORM}")
    return "address", spec


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise LdpSimError(
            f"--scheduler: Dask distributed is not installed, expected the optional extra: {EXTRA}"
        ) from None
    return distributed


def check_installed() -> None:
    """One line naming the extra when Dask distributed is missing (before any work)."""
    _distributed()


@contextmanager
def connect(spec: str) -> Iterator[Cluster]:
    """A :class:`Cluster` for the block: a local cluster started (and closed after), or a
    client of a running scheduler (disconnected after; the cluster keeps running)."""
    kind, value = parse(spec)
    distributed = _distributed()
    cluster = None
    try:
        if kind == "local":
            cluster = distributed.LocalCluster(
                n_workers=int(value),
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
            client = distributed.Client(cluster, set_as_default=False)
        else:
            client = distributed.Client(str(value), timeout=CONNECT_TIMEOUT, set_as_default=False)
    except LdpSimError:
        raise
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise LdpSimError(
            f"--scheduler: got {spec!r}, expected a scheduler that answers ({' '.join(str(exc).split())[:160]})"
        ) from None
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        link = getattr(client, "dashboard_link", None)
        yield Cluster(client.get_executor(), workers, str(link) if link else None, spec, client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["Cluster", "EXTRA", "check_installed", "connect", "parse"]
