"""Frequency oracles of ldpsim against the peer libraries pure-ldp and multi-freq-ldpy:
time per report, estimator MSE against the exact variance, aggregate draws, OLH memory.

Every figure, and the n it is measured at (all at eps = 1 unless ``--eps``):

* ``timing`` (individual mode: every report simulated). ldpsim: every oracle of the
  catalog tagged ``oracle`` (randomized response, SUE, OUE, OLH, BLH, Hadamard response,
  subset selection, RAPPOR) at k = 64 and 4096 and at the full n = 10^6 and 10^7
  (``--sizes``): inputs drawn uniformly in batches of ``--batch`` clients (2^16, the
  engine's ``simulation.batch_size``; the draw of the inputs is not timed), each batch
  privatised and added to the server's statistic, then one estimate (``invert``). One run
  per case; oracle construction is not timed. Exception: RAPPOR at k >= 1024 needs m >= k
  Bloom filter bits to be estimable (here m = 2k = 8192 bits per report), so it is
  timed at min(n, ``--rappor-wide-n``) = 10^5 clients; the table says so in its ``n``.
  The OLH cases at k = 4096 run in a fresh subprocess, which also measures their memory
  (below). Peers: the same oracle in pure-ldp 1.2.0 and multi-freq-ldpy 0.2.5, whose
  clients run one Python call per report, timed on far fewer reports: per case
  n = min(``--peer-n`` = 10^5, the largest 1-2-5 number whose time, predicted from two
  pilot runs of 50 and 250 reports, fits ``--peer-budget`` = 5 s), at least
  ``--peer-min-n`` = 1000, and for multi-freq-ldpy (whose aggregator takes the list of
  all reports) at most 1 GiB of stored reports. The n of every peer figure is printed in
  its row. Each peer case first runs once on 20 reports (numba's JIT compilation of
  multi-freq-ldpy's clients happens there); the timed run is a later call. Everyone's
  figure is ``ns_per_report`` = (privatise n reports + server statistic and estimate) / n.
* ``speedup``: the fastest peer with the same definition (its own n) over ldpsim (at each
  of its n), per oracle and k; goal: at least 5x. Peer variants that are not the same
  oracle are shown but not counted (see below).
* ``mse``: k = ``--mse-k`` = 64, inputs i.i.d. from a Zipf(1.1) prior, ``--mse-reps`` =
  200 replications of n = ``--mse-n`` = 10^4 reports for ldpsim and n = ``--mse-peer-n``
  = 2000 for the peers. The empirical total MSE (the squared error of the estimate
  summed over the k answers, averaged over the replications) is compared with the exact
  total variance ``trace(estimate_covariance(prior, n))`` of ldpsim's oracle with the
  peer's parameters. Tolerance: if the estimate error were exactly normal with that
  covariance Sigma (eigenvalues l_j), the sum over R replications of the squared errors
  would be ``S = sum_j l_j chi2_R``, and Laurent and Massart (2000, Lemma 1) give, for
  x > 0, ``P(S - R tr >= 2 sqrt(R sum l^2 x) + 2 l_max x) <= e^-x`` and
  ``P(S - R tr <= -2 sqrt(R sum l^2 x)) <= e^-x``. With ``x = log(2 / alpha)``,
  ``alpha = --alpha = 1e-6``, a correct oracle fails with probability at most 1e-6. The
  error is a mean of n independent reports, normal only in the limit; its finite-n
  departure changes the variance of the squared error by a relative O(1/n), far inside
  the slack of the Chernoff bounds above. multi-freq-ldpy's shipped estimate clips at 0
  and renormalises (biased by design): its MI estimate before that step is the one
  checked (captured by wrapping the library's ``MI``); the shipped one's MSE is shown too.
* ``aggregate``: 10^12 respondents over k = 4096 answers (a multinomial split of a Zipf
  prior): the time of ``sample_statistic`` (the exact law of the server's statistic at a
  cost independent of n), best of ``--repeats`` after one warm-up, for every oracle that
  has one; target under 1 s (the goal names SUE, OUE and Hadamard response).
* ``memory``: OLH at k = 4096 and n = 10^7 (and 10^6), privatise + statistic + estimate
  as above, in a fresh subprocess: its resident set at the start (after imports and the
  oracle's construction), its peak during the run (``VmHWM`` after resetting it through
  ``/proc/self/clear_refs``; else ``ru_maxrss``) and the difference. ldpsim chunks OLH
  itself (``privatize`` by ``DEFAULT_CHUNK`` clients, ``statistic`` by
  ``STATISTIC_CHUNK`` reports), so the peak depends on the batch, not on n.

What differs in the peers (printed in the legend under the timing table and in the summary;
``note`` and ``variant`` in the JSON rows):

* pure-ldp local hashing hashes ``str(x)`` with xxh32 under a per-client seed (32 bits
  used) and estimates with q = 1/g, the ideal-hash value; ldpsim draws a degree-2
  polynomial hash mod 2^31 - 1 and uses its exact q*. Same g = 4 at eps = 1; the same
  oracle up to the hash family. The same holds for multi-freq-ldpy's LH.
* pure-ldp Hadamard response at eps <= 1 is the high-privacy HR, the same law and
  estimator as ldpsim's; above eps = 1 it switches to a blocked variant (then marked).
* pure-ldp FastLH (clients pick one of ``--flh-k`` public hash functions) and pure-ldp
  RAPPOR (8 cohorts, permanent randomised response only, non-negative ElasticNet
  regression; k = 64 only, its regression at k = 4096 is beyond this run) are variants,
  timed for reference only. ldpsim's RAPPOR here uses h = 2 hashes, m = 2k bits,
  p = 0, q = 1 and f = 2 / (1 + e^(eps/4)), so one report's client law is pure-ldp's
  (for one cohort) and its exact eps is ``--eps``.
* Not in ldpsim, not timed: pure-ldp's Hadamard mechanism, histogram encoding, CMS and
  sketches; multi-freq-ldpy's HE and ADP (ADP picks GRR or OUE, both timed).

Peers are optional (``pip install -e .[peers]``); without them only ldpsim is measured and
the peers are reported as not installed. Both peers hash ``str`` keys, which xxhash 4
rejects, and pure-ldp imports scikit-learn and statsmodels without declaring them; the
extra pins and adds those.

Run from the repo root: ``python benchmarks/bench_oracles.py [--quick] [--json PATH]``
(full run: about 10 minutes on 2 cores shared with other processes; ``--quick``: about 25 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from _common import batched, best_of, parser, report, timed
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import FrequencyOracle
from ldpsim.mechanisms.oracles.hadamard import HadamardResponse
from ldpsim.mechanisms.oracles.hashing import BinaryLocalHashing, OptimizedLocalHashing
from ldpsim.mechanisms.oracles.rappor import Rappor
from ldpsim.mechanisms.oracles.subset import SubsetSelection

GOAL_SPEEDUP = 5.0
AGG_TARGET_S = 1.0
AGG_GOAL = ("sue", "oue", "hadamard_response")  # the oracles the aggregate goal names
RAPPOR_HASHES = 2
WIDE_K = 1024  # RAPPOR at k >= this is timed at --rappor-wide-n
PEER_STORE_CAP = 1 << 30  # bytes of reports a peer's aggregator may hold in its list
PILOT = {False: (50, 250), True: (20, 80)}  # reports in the two pilot runs of a peer case (full, quick)
WARMUP = 20  # reports in the warm-up run of a peer case
#: long text columns kept in the JSON rows but left out of the printed tables and CSVs
#: (they are printed once, as a legend)
LONG = ("api", "note", "variant", "peer_api", "reference")

# (full run, --quick) defaults of the options whose default is None
DEFAULTS = {
    "sizes": ("1000000,10000000", "10000,100000"),
    "rappor_wide_n": (100_000, 10_000),
    "peer_n": (100_000, 2_000),
    "peer_min_n": (1_000, 100),
    "peer_budget": (5.0, 0.3),
    "flh_k": (1_000, 100),
    "mse_reps": (200, 50),
    "mse_n": (10_000, 2_000),
    "mse_peer_n": (2_000, 300),
    "memory_n": ("1000000,10000000", "100000"),
}


# --------------------------------------------------------------------------- helpers
def seq(seed: int, *keys: Any) -> np.random.SeedSequence:
    """A SeedSequence fixed by the seed and the case's keys (independent of run order)."""
    return np.random.SeedSequence([seed] + [zlib.crc32(str(key).encode()) for key in keys])


def zipf(k: int, s: float = 1.1) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1, dtype=np.float64) ** s
    return w / w.sum()


def nice_floor(v: float) -> int:
    """The largest of 1, 2, 5 times a power of ten not above ``v`` (at least 1)."""
    if v < 2:
        return 1
    e = 10 ** int(math.floor(math.log10(v)))
    return next(m * e for m in (5, 2, 1) if m * e <= v)


def ns(seconds: float, n: int) -> float:
    return seconds / n * 1e9


def compact(rows: list[dict]) -> list[dict]:
    """The rows without their long text columns (see :data:`LONG`), a variant as a flag."""
    out = []
    for row in rows:
        short = {key: val for key, val in row.items() if key not in LONG}
        if row.get("variant"):
            short["variant"] = "yes"
        out.append(short)
    return out


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


# --------------------------------------------------------------------------- ldpsim side
def rappor_for(k: int, eps: float) -> Rappor:
    """RAPPOR with h = 2 hashes, m = 2k bits, p = 0, q = 1 (the permanent randomised
    response only, as pure-ldp's client) and f with exact eps ``eps``: two disjoint
    patterns give ``h log(q*(1-p*)/(p*(1-q*))) = 2h log((1-f/2)/(f/2))``. The first cohort
    whose pattern matrix has full rank k (so that the least-squares estimate exists)."""
    f = 2.0 / (1.0 + math.exp(eps / (2 * RAPPOR_HASHES)))
    for cohort in range(64):
        mech = Rappor(k, 2 * k, RAPPOR_HASHES, f, 0.0, 1.0, cohort=cohort)
        if mech.identifiable:
            assert abs(float(mech.epsilon()) - eps) <= 1e-9 * max(1.0, eps), mech.epsilon()
            return mech
    raise RuntimeError(f"no cohort of RAPPOR(k={k}, m={2 * k}) has a full-rank pattern matrix")


@lru_cache(maxsize=None)
def build_ldpsim(name: str, k: int, eps: float) -> FrequencyOracle | None:
    """The catalog's oracle ``name`` at (k, eps); None for an entry with no (k, eps)."""
    if name == "rappor":
        return rappor_for(k, eps)
    params = catalog.entry(name).params
    if "k" in params and "eps" in params:
        return catalog.build(name, k=k, eps=eps)
    return None


def time_ldpsim(mech: FrequencyOracle, n: int, batch: int, sq: np.random.SeedSequence) -> dict:
    """Privatise n clients (uniform inputs, drawn untimed) in batches, add each batch's
    statistic, estimate once: the seconds of each step."""
    g_in, g_priv = (np.random.default_rng(s) for s in sq.spawn(2))
    t_priv, t_stat, total = batched(mech, n, batch, g_in, g_priv)
    t_est, est = timed(lambda: mech.invert(total / n))
    assert np.all(np.isfinite(est)) and est.shape == (mech.k,)
    return dict(seconds=t_priv + t_stat + t_est, privatize_s=t_priv, statistic_s=t_stat, estimate_s=t_est)


# ----- the memory subprocess
def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the peak resident set (VmHWM) to the current one (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return _status_kib("VmHWM") is not None
    except OSError:
        return False


def memory_child(spec: dict) -> None:
    """Run one timed case in this fresh process and print its time and memory as JSON."""
    mech = build_ldpsim(spec["oracle"], spec["k"], spec["eps"])
    sq = seq(spec["seed"], "timing", spec["oracle"], spec["k"], spec["n"])
    start_kib = _status_kib("VmRSS")
    if _reset_peak():
        method = "VmHWM after reset through /proc/self/clear_refs"
        result = time_ldpsim(mech, spec["n"], spec["batch"], sq)
        peak_kib = _status_kib("VmHWM")
    else:  # the process's lifetime peak: an upper bound on the run's
        method = "ru_maxrss (lifetime peak of the process)"
        result = time_ldpsim(mech, spec["n"], spec["batch"], sq)
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if start_kib is None:
        start_kib = 0
    result.update(
        rss_start_mib=start_kib / 1024,
        rss_peak_mib=peak_kib / 1024,
        run_extra_mib=(peak_kib - start_kib) / 1024,
        memory_method=method,
    )
    print(json.dumps(result))


def run_memory_child(oracle: str, k: int, n: int, args: argparse.Namespace) -> dict:
    spec = dict(oracle=oracle, k=k, n=n, eps=args.eps, batch=args.batch, seed=args.seed)
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- peers
def _identity(v: int) -> int:
    return v


@dataclass
class PeerCase:
    """One oracle of a peer library. ``prepare(k)`` builds the client and server (not
    timed); ``run(state, xs)`` privatises the inputs ``xs`` (a list of ints), aggregates
    and estimates, returning frequency estimates (length k). ``reference(k)`` is ldpsim's
    oracle with the peer's parameters, whose exact covariance the MSE check uses (None: no
    check, for variants). ``variant``: what makes it a different oracle (None: the same)."""

    library: str
    oracle: str
    label: str
    prepare: Callable[[int], Any]
    run: Callable[[Any, list], np.ndarray]
    reference: Callable[[int], FrequencyOracle] | None
    variant: str | None = None
    note: str = ""
    ks: tuple[int, ...] | None = None  # None: every k
    store_bytes: Callable[[int], int] | None = None  # bytes per report the aggregator's list holds
    capture: Callable[[], Any] | None = None  # context manager yielding the raw (unbiased) estimates


def peer_versions() -> dict[str, str]:
    out = {}
    for dist in ("pure-ldp", "multi-freq-ldpy", "xxhash", "numba", "scikit-learn", "statsmodels"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _pure_run(state: Any, xs: list) -> np.ndarray:
    client, server = state
    for v in xs:
        server.aggregate(client.privatise(v))
    est = server.estimate_all(range(server.d), suppress_warnings=True)
    return np.asarray(est, dtype=np.float64) / len(xs)  # pure-ldp estimates counts


def pure_ldp_cases(eps: float, flh_k: int) -> list[PeerCase]:
    import pure_ldp.frequency_oracles as P  # needs scikit-learn and statsmodels (its RAPPOR server)

    def pair(make_server, make_client):
        def prepare(k):
            server = make_server(k)
            return make_client(k, server), server

        return prepare

    lh_note = "xxh32 of str(x) under a per-client seed; server q = 1/g (ldpsim: degree-2 polynomial hash, exact q*)"
    g_olh = int(round(math.exp(eps))) + 1  # pure-ldp's OLH g
    hr_variant = None if eps <= 1 else "eps > 1: pure-ldp's blocked general-privacy HR, not the same oracle"
    cases = [
        PeerCase(
            "pure-ldp",
            "randomized_response",
            "DEClient/DEServer",
            pair(
                lambda k: P.DEServer(eps, k, index_mapper=_identity),
                lambda k, s: P.DEClient(eps, k, index_mapper=_identity),
            ),
            _pure_run,
            lambda k: catalog.build("randomized_response", k=k, eps=eps),
        ),
        PeerCase(
            "pure-ldp",
            "sue",
            "UEClient/UEServer(use_oue=False)",
            pair(
                lambda k: P.UEServer(eps, k, use_oue=False, index_mapper=_identity),
                lambda k, s: P.UEClient(eps, k, use_oue=False, index_mapper=_identity),
            ),
            _pure_run,
            lambda k: catalog.build("sue", k=k, eps=eps),
        ),
        PeerCase(
            "pure-ldp",
            "oue",
            "UEClient/UEServer(use_oue=True)",
            pair(
                lambda k: P.UEServer(eps, k, use_oue=True, index_mapper=_identity),
                lambda k, s: P.UEClient(eps, k, use_oue=True, index_mapper=_identity),
            ),
            _pure_run,
            lambda k: catalog.build("oue", k=k, eps=eps),
        ),
        PeerCase(
            "pure-ldp",
            "olh",
            f"LHClient/LHServer(use_olh=True), g={g_olh}",
            pair(
                lambda k: P.LHServer(eps, k, use_olh=True, index_mapper=_identity),
                lambda k, s: P.LHClient(eps, k, use_olh=True, index_mapper=_identity),
            ),
            _pure_run,
            lambda k: OptimizedLocalHashing(k, eps, g=g_olh),
            note=lh_note,
        ),
        PeerCase(
            "pure-ldp",
            "blh",
            "LHClient/LHServer(g=2)",
            pair(
                lambda k: P.LHServer(eps, k, g=2, index_mapper=_identity),
                lambda k, s: P.LHClient(eps, k, g=2, index_mapper=_identity),
            ),
            _pure_run,
            lambda k: BinaryLocalHashing(k, eps),
            note=lh_note,
        ),
        PeerCase(
            "pure-ldp",
            "hadamard_response",
            "HadamardResponseClient/Server",
            pair(
                lambda k: P.HadamardResponseServer(eps, k, index_mapper=_identity),
                lambda k, s: P.HadamardResponseClient(eps, k, s.get_hash_funcs(), index_mapper=_identity),
            ),
            _pure_run,
            None if hr_variant else (lambda k: HadamardResponse(k, eps)),
            variant=hr_variant,
            note="high-privacy HR (eps <= 1): flips the highest set bit of x+1 where ldpsim flips the lowest; same law",
        ),
    ]

    flh_cache: dict[int, Any] = {}

    def flh_prepare(k):
        # its server hashes every answer under all k' seeds when built (k' k xxh32 calls,
        # twice): built once per k, then reset
        if k not in flh_cache:
            server = P.FastLHServer(eps, k, flh_k, use_olh=True, index_mapper=_identity)
            client = P.FastLHClient(eps, k, flh_k, use_olh=True, index_mapper=_identity)
            flh_cache[k] = (client, server)
        client, server = flh_cache[k]
        server.reset()
        server.hash_counts[:] = 0
        return client, server

    cases.append(
        PeerCase(
            "pure-ldp",
            "olh",
            f"FastLHClient/Server(k'={flh_k}, use_olh=True)",
            flh_prepare,
            _pure_run,
            None,
            variant=f"FastLH: every client uses one of {flh_k} public hash functions "
            "(a heuristic, not OLH's law or estimator)",
        )
    )

    f_rappor = 2.0 / (1.0 + math.exp(eps / (2 * RAPPOR_HASHES)))

    def rappor_prepare(k):
        server = P.RAPPORServer(f_rappor, 2 * k, RAPPOR_HASHES, k, num_of_cohorts=8, index_mapper=_identity)
        client = P.RAPPORClient(f_rappor, 2 * k, server.get_hash_funcs(), num_of_cohorts=8, index_mapper=_identity)
        return client, server

    cases.append(
        PeerCase(
            "pure-ldp",
            "rappor",
            f"RAPPORClient/Server(f={f_rappor:.4f}, m=2k, h=2, 8 cohorts)",
            rappor_prepare,
            _pure_run,
            None,
            ks=(64,),
            variant="8 cohorts, permanent randomised response only, non-negative ElasticNet estimate "
            "(ldpsim: one cohort, exact least squares); at k=4096 its regression is not run",
        )
    )
    return cases


@contextlib.contextmanager
def _mfl_capture() -> Iterator[list]:
    """Record multi-freq-ldpy's MI estimate before its clip-and-renormalise step: wrap the
    ``MI`` each pure frequency-oracle module imported (restored on exit)."""
    from multi_freq_ldpy.estimators import Histogram_estimator
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, SS, UE

    original = Histogram_estimator.MI
    raw: list[np.ndarray] = []

    def recording_mi(count_report, n, p, q):
        raw.append((np.asarray(count_report, dtype=np.float64) - n * q) / (p - q) / n)
        return original(count_report, n, p, q)

    modules = (GRR, LH, SS, UE)
    saved = [m.MI for m in modules]
    for m in modules:
        m.MI = recording_mi
    try:
        yield raw
    finally:
        for m, fn in zip(modules, saved):
            m.MI = fn


def multi_freq_cases(eps: float) -> list[PeerCase]:
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, SS, UE

    def runner(client, aggregate):
        def run(k, xs):  # the state prepare() returns is k
            reports = [client(v, k) for v in xs]
            return np.asarray(aggregate(reports, k), dtype=np.float64)

        return run

    note = "shipped estimate clips at 0 and renormalises; MSE checked on its MI estimate before that step"
    g_olh = int(round(np.exp(eps))) + 1

    def ss_reference(k):
        return SubsetSelection(k, eps, omega=int(max(1, np.rint(k / (np.exp(eps) + 1)))))

    specs = [
        (
            "randomized_response",
            "GRR_Client/GRR_Aggregator_MI",
            lambda v, k: GRR.GRR_Client(v, k, eps),
            lambda r, k: GRR.GRR_Aggregator_MI(r, k, eps),
            lambda k: catalog.build("randomized_response", k=k, eps=eps),
            lambda k: 32,
            note,
        ),
        (
            "sue",
            "UE_Client/UE_Aggregator_MI(optimal=False)",
            lambda v, k: UE.UE_Client(v, k, eps, False),
            lambda r, k: UE.UE_Aggregator_MI(r, eps, False),
            lambda k: catalog.build("sue", k=k, eps=eps),
            lambda k: 8 * k + 112,
            note,
        ),
        (
            "oue",
            "UE_Client/UE_Aggregator_MI(optimal=True)",
            lambda v, k: UE.UE_Client(v, k, eps, True),
            lambda r, k: UE.UE_Aggregator_MI(r, eps, True),
            lambda k: catalog.build("oue", k=k, eps=eps),
            lambda k: 8 * k + 112,
            note,
        ),
        (
            "olh",
            f"LH_Client/LH_Aggregator_MI(optimal=True), g={g_olh}",
            lambda v, k: LH.LH_Client(v, k, eps, True),
            lambda r, k: LH.LH_Aggregator_MI(r, k, eps, True),
            lambda k: OptimizedLocalHashing(k, eps, g=g_olh),
            lambda k: 150,
            note + "; xxh32 of str(x), per-client seed, server q = 1/g",
        ),
        (
            "blh",
            "LH_Client/LH_Aggregator_MI(optimal=False)",
            lambda v, k: LH.LH_Client(v, k, eps, False),
            lambda r, k: LH.LH_Aggregator_MI(r, k, eps, False),
            lambda k: BinaryLocalHashing(k, eps),
            lambda k: 150,
            note + "; xxh32 of str(x), per-client seed, server q = 1/g",
        ),
        (
            "subset_selection",
            "SS_Client/SS_Aggregator_MI, omega=rint(k/(e^eps+1))",
            lambda v, k: SS.SS_Client(v, k, eps),
            lambda r, k: SS.SS_Aggregator_MI(r, k, eps),
            ss_reference,
            lambda k: 8 * int(max(1, np.rint(k / (np.exp(eps) + 1)))) + 112,
            note,
        ),
    ]
    cases = []
    for oracle, label, client, aggregate, ref, store, nt in specs:
        run = runner(client, aggregate)
        cases.append(
            PeerCase(
                "multi-freq-ldpy",
                oracle,
                label,
                prepare=lambda k: k,
                run=run,
                reference=ref,
                note=nt,
                store_bytes=store,
                capture=_mfl_capture,
            )
        )
    return cases


_numba_seed: Callable[[int], None] | None = None


def _make_numba_seeder() -> None:
    """numba's jitted code has its own generator: seed it from jitted code."""
    global _numba_seed
    try:
        from numba import njit
    except ImportError:
        return

    @njit
    def seed(value):
        np.random.seed(value)

    seed(0)  # compile
    _numba_seed = seed


def seed_peers(sq: np.random.SeedSequence) -> None:
    """The peers draw from Python's ``random``, numpy's global generator and numba's."""
    s = sq.generate_state(3)
    random.seed(int(s[0]))
    np.random.seed(int(s[1]))
    if _numba_seed is not None:
        _numba_seed(int(s[2]))


def load_peers(args: argparse.Namespace) -> tuple[list[PeerCase], dict[str, str]]:
    status: dict[str, str] = {}
    cases: list[PeerCase] = []
    if args.skip_peers:
        return cases, {"pure-ldp": "skipped (--skip-peers)", "multi-freq-ldpy": "skipped (--skip-peers)"}
    versions = peer_versions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib, loader in (
            ("pure-ldp", lambda: pure_ldp_cases(args.eps, args.flh_k)),
            ("multi-freq-ldpy", lambda: multi_freq_cases(args.eps)),
        ):
            if versions[lib] == "not installed":
                status[lib] = "not installed (pip install -e .[peers])"
                continue
            try:
                cases += loader()
                status[lib] = f"{versions[lib]}"
            except Exception as exc:  # noqa: BLE001 - a broken peer install is reported, not fatal
                status[lib] = f"{versions[lib]}, not importable: {type(exc).__name__}: {exc}"
        if any(c.library == "multi-freq-ldpy" for c in cases):
            _make_numba_seeder()
    return cases, status


def _peer_run(case: PeerCase, k: int, xs: list) -> tuple[float, np.ndarray]:
    state = case.prepare(k)  # not timed
    return timed(lambda: case.run(state, xs))


def time_peer(case: PeerCase, k: int, args: argparse.Namespace) -> dict:
    """Warm-up, two pilots, then one timed run at the n the budget allows."""
    sq = seq(args.seed, "peer", case.library, case.label, k)
    g_in, g_peer = sq.spawn(2)
    seed_peers(g_peer)
    xs = np.random.default_rng(g_in).integers(0, k, size=args.peer_n).tolist()
    _peer_run(case, k, xs[:WARMUP])  # JIT compilation (numba), first-call costs
    n1, n2 = (min(p, args.peer_n) for p in PILOT[args.quick])
    t1, _ = _peer_run(case, k, xs[:n1])
    t2, _ = _peer_run(case, k, xs[:n2])
    per = max((t2 - t1) / max(n2 - n1, 1), t2 / n2 * 0.1, 1e-9)
    fixed = max(t2 - n2 * per, 0.0)
    n = nice_floor(max(args.peer_budget - fixed, 0.0) / per)
    limit = "budget"
    if n >= args.peer_n:
        n, limit = args.peer_n, "peer-n"
    if case.store_bytes is not None:
        cap = nice_floor(PEER_STORE_CAP / case.store_bytes(k))
        if cap < n:
            n, limit = cap, "report memory (1 GiB)"
    if n < args.peer_min_n:
        n, limit = args.peer_min_n, "peer-min-n"
    n = min(n, args.peer_n)
    seconds, est = _peer_run(case, k, xs[:n])
    assert est.shape == (k,), est.shape
    return dict(n=n, seconds=seconds, n_limited_by=limit)


# --------------------------------------------------------------------------- MSE check
def tolerance(cov: np.ndarray, reps: int, alpha: float) -> tuple[float, float, float]:
    """(exact total variance, lower, upper limit of the mean total squared error) from
    Laurent-Massart's bounds on sum_j l_j chi2_reps, two-sided level ``alpha``."""
    cov = (cov + cov.T) / 2.0
    fro2 = float(np.sum(cov * cov))  # sum of squared eigenvalues
    trace = float(np.trace(cov))
    if cov.shape[0] <= 2048:
        lmax = float(np.linalg.eigvalsh(cov)[-1])
    else:  # Gershgorin: an upper bound (a wider, still valid, upper limit)
        lmax = float(np.max(np.sum(np.abs(cov), axis=1)))
    x = math.log(2.0 / alpha)
    spread = 2.0 * math.sqrt(fro2 * x / reps)
    return trace, trace - spread, trace + spread + 2.0 * lmax * x / reps


def mse_ldpsim(mech: FrequencyOracle, prior: np.ndarray, n: int, reps: int, sq: np.random.SeedSequence) -> np.ndarray:
    gen = np.random.default_rng(sq)
    err = np.empty(reps)
    for r in range(reps):
        x = gen.choice(mech.k, size=n, p=prior)
        est = mech.invert(mech.statistic(mech.privatize(x, gen)) / n)
        err[r] = float(np.sum((est - prior) ** 2))
    return err


def mse_peer(
    case: PeerCase, prior: np.ndarray, n: int, reps: int, sq: np.random.SeedSequence
) -> tuple[np.ndarray, np.ndarray | None]:
    """Total squared errors of the peer's unbiased estimate (and of its shipped one when
    that differs)."""
    g_in, g_peer = sq.spawn(2)
    gen = np.random.default_rng(g_in)
    seed_peers(g_peer)
    k = prior.size
    err = np.empty(reps)
    shipped = np.empty(reps) if case.capture is not None else None
    with case.capture() if case.capture is not None else contextlib.nullcontext() as raw:
        for r in range(reps):
            xs = gen.choice(k, size=n, p=prior).tolist()
            _, est = _peer_run(case, k, xs)
            if raw is not None:
                assert len(raw) == r + 1, "the peer's MI was not called exactly once"
                shipped[r] = float(np.sum((est - prior) ** 2))
                est = raw[-1]
            err[r] = float(np.sum((est - prior) ** 2))
    return err, shipped


def mse_row(
    library: str,
    oracle: str,
    label: str,
    ref: FrequencyOracle,
    prior: np.ndarray,
    n: int,
    err: np.ndarray,
    alpha: float,
    checked: bool = True,
) -> dict:
    cov = ref.estimate_covariance(prior, n)
    exact, lo, hi = tolerance(cov, err.size, alpha)
    mse = float(err.mean())
    return dict(
        benchmark="oracles",
        case=f"{library} {oracle}",
        library=library,
        oracle=oracle,
        peer_api=label,
        reference=repr(ref),
        n=n,
        k=prior.size,
        reps=err.size,
        exact_total_var=exact,
        empirical_mse=mse,
        ratio=mse / exact,
        lower_ratio=lo / exact,
        upper_ratio=hi / exact,
        verdict=("pass" if lo <= mse <= hi else "FAIL") if checked else "not checked (biased by design)",
    )


# --------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    p = parser(__doc__.splitlines()[0], repeats=5)
    p.add_argument("--quick", action="store_true", help="a small smoke run (seconds): small n everywhere")
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write every figure to this JSON file")
    p.add_argument("--eps", type=float, default=1.0, help="privacy level of every oracle")
    p.add_argument("--ks", default="64,4096", help="alphabet sizes of the timing (comma-separated)")
    p.add_argument("--sizes", default=None, help="ldpsim's numbers of reports (default 10^6,10^7; quick 10^4,10^5)")
    p.add_argument("--batch", type=int, default=1 << 16, help="clients per batch (the engine's batch_size)")
    p.add_argument(
        "--rappor-wide-n",
        type=int,
        default=None,
        help=f"at most this many reports for RAPPOR at k >= {WIDE_K} (m = 2k bits; default 10^5)",
    )
    p.add_argument("--skip-peers", action="store_true", help="measure ldpsim only")
    p.add_argument("--peer-n", type=int, default=None, help="largest n of a peer's timing (default 10^5)")
    p.add_argument("--peer-min-n", type=int, default=None, help="smallest n of a peer's timing (default 1000)")
    p.add_argument("--peer-budget", type=float, default=None, help="seconds aimed at per peer timing (default 5)")
    p.add_argument("--flh-k", type=int, default=None, help="hash functions of pure-ldp's FastLH (default 1000)")
    p.add_argument("--mse-k", type=int, default=64, help="alphabet size of the MSE check")
    p.add_argument("--mse-reps", type=int, default=None, help="replications of the MSE check (default 200)")
    p.add_argument("--mse-n", type=int, default=None, help="reports per replication, ldpsim (default 10^4)")
    p.add_argument("--mse-peer-n", type=int, default=None, help="reports per replication, peers (default 2000)")
    p.add_argument("--alpha", type=float, default=1e-6, help="false-failure probability of one MSE check")
    p.add_argument("--agg-n", type=int, default=10**12, help="respondents of the aggregate draw")
    p.add_argument("--agg-k", type=int, default=4096, help="alphabet size of the aggregate draw")
    p.add_argument("--memory-n", default=None, help="n of the OLH memory runs at k = 4096 (default 10^6,10^7)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return p


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    col = 1 if args.quick else 0
    for key, values in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, values[col])
    args.sizes = [int(float(s)) for s in str(args.sizes).split(",")]
    args.ks = [int(s) for s in str(args.ks).split(",")]
    args.memory_n = [int(float(s)) for s in str(args.memory_n).split(",")]
    return args


def section(title: str, t_start: float) -> None:
    elapsed = time.perf_counter() - t_start
    print(f"\n== {title}  (t = {elapsed:.0f} s, load average {os.getloadavg()[0]:.2f})", flush=True)


def main() -> None:
    args = build_parser().parse_args()
    if args.child is not None:
        memory_child(json.loads(args.child))
        return
    args = resolve(args)
    t_start = time.perf_counter()
    eps = args.eps
    names = catalog.names("oracle")
    cases, peer_status = load_peers(args)
    load_before = os.getloadavg()
    print(
        f"bench_oracles: eps = {eps}, seed = {args.seed}, {'QUICK run' if args.quick else 'full run'}; "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} at the start (other processes share the CPU)"
    )
    print(
        f"python {platform.python_version()}, numpy {np.__version__}; peers: "
        + "; ".join(f"{lib} {s}" for lib, s in peer_status.items())
        + f"; versions {json.dumps(peer_versions())}"
    )
    print(f"ldpsim oracles (catalog tag 'oracle'): {', '.join(names)}")
    print(
        f"ldpsim timed at n = {args.sizes} (RAPPOR at k >= {WIDE_K}: at most {args.rappor_wide_n}); peers at the "
        f"n in their rows (<= {args.peer_n}, chosen for a {args.peer_budget:g} s budget, >= {args.peer_min_n}); "
        "figures are ns per report (privatise + statistic + estimate)"
    )

    # ---------------------------------------------------------------- timing
    section("timing", t_start)
    timing: list[dict] = []
    memory: list[dict] = []
    for k in args.ks:
        for name in names:
            mech = build_ldpsim(name, k, eps)
            if mech is None:
                print(f"  skipped {name}: its catalog entry has no (k, eps) parameters")
                continue
            wide = name == "rappor" and k >= WIDE_K
            for n in sorted({min(n, args.rappor_wide_n) if wide else n for n in args.sizes}):
                base = dict(
                    benchmark="oracles",
                    case=f"ldpsim {name}",
                    library="ldpsim",
                    oracle=name,
                    k=k,
                    n=n,
                    m=mech.statistic_size,
                    api=repr(mech),
                )
                if name == "olh" and k == 4096 and n in args.memory_n:
                    res = run_memory_child(name, k, n, args)
                    memory.append(
                        dict(
                            benchmark="oracles",
                            case="ldpsim olh privatise + statistic + estimate",
                            n=n,
                            k=k,
                            batch=args.batch,
                            seconds=res["seconds"],
                            rss_start_mib=res["rss_start_mib"],
                            rss_peak_mib=res["rss_peak_mib"],
                            run_extra_mib=res["run_extra_mib"],
                            method=res["memory_method"],
                        )
                    )
                    remark = "fresh subprocess (memory run)"
                else:
                    res = time_ldpsim(mech, n, args.batch, seq(args.seed, "timing", name, k, n))
                    remark = "n capped: m = 2k bits per report" if wide else ""
                timing.append(
                    dict(
                        base,
                        seconds=res["seconds"],
                        throughput_per_s=n / res["seconds"],
                        ns_per_report=ns(res["seconds"], n),
                        privatize_s=res["privatize_s"],
                        statistic_s=res["statistic_s"],
                        estimate_s=res["estimate_s"],
                        remark=remark,
                    )
                )
                print(
                    f"  ldpsim {name:20s} k={k:5d} n={n:>9d}: {res['seconds']:8.2f} s, "
                    f"{ns(res['seconds'], n):10.1f} ns/report",
                    flush=True,
                )
        for case in cases:
            if case.ks is not None and k not in case.ks:
                continue
            base = dict(
                benchmark="oracles",
                case=f"{case.library} {case.oracle}",
                library=case.library,
                oracle=case.oracle,
                k=k,
                api=case.label,
                variant=case.variant or "",
                note=case.note,
            )
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = time_peer(case, k, args)
            except Exception as exc:  # noqa: BLE001 - one failing peer case is reported, not fatal
                msg = f"{type(exc).__name__}: {exc}"
                if "encoded" in msg:
                    msg += " (the peers hash str keys: needs xxhash<4)"
                timing.append(dict(base, status=f"error: {msg}"[:300]))
                print(f"  {case.library} {case.oracle} k={k}: error {msg}", flush=True)
                continue
            timing.append(
                dict(
                    base,
                    n=res["n"],
                    seconds=res["seconds"],
                    throughput_per_s=res["n"] / res["seconds"],
                    ns_per_report=ns(res["seconds"], res["n"]),
                    n_limited_by=res["n_limited_by"],
                    status="ok",
                )
            )
            print(
                f"  {case.library:15s} {case.oracle:20s} k={k:5d} n={res['n']:>9d}: {res['seconds']:8.2f} s, "
                f"{ns(res['seconds'], res['n']):10.1f} ns/report{'  [variant]' if case.variant else ''}",
                flush=True,
            )
    for row in timing:
        row.setdefault("status", "ok")
    report("oracles_timing", compact(timing), args.out)
    print("legend (what each row ran):")
    for line in dict.fromkeys(
        f"  {r['case']}"
        + (f" k={r['k']}" if r["library"] == "ldpsim" else "")
        + f": {r['api']}"
        + (f"; VARIANT: {r['variant']}" if r.get("variant") else "")
        + (f"; note: {r['note']}" if r.get("note") else "")
        for r in timing
    ):
        print(line)

    # ---------------------------------------------------------------- speedup
    section("speedup: fastest same-definition peer / ldpsim (per report; each at its own n)", t_start)
    speed: list[dict] = []
    peer_ok = [r for r in timing if r["library"] != "ldpsim" and r["status"] == "ok"]
    for row in (r for r in timing if r["library"] == "ldpsim"):
        same = [r for r in peer_ok if r["oracle"] == row["oracle"] and r["k"] == row["k"] and not r["variant"]]
        base = dict(
            benchmark="oracles",
            case=f"{row['oracle']}",
            oracle=row["oracle"],
            k=row["k"],
            ldpsim_n=row["n"],
            ldpsim_ns_per_report=row["ns_per_report"],
        )
        if same:
            best = min(same, key=lambda r: r["ns_per_report"])
            ratio = best["ns_per_report"] / row["ns_per_report"]
            speed.append(
                dict(
                    base,
                    peer=best["library"],
                    peer_n=best["n"],
                    peer_ns_per_report=best["ns_per_report"],
                    speedup=ratio,
                    target=f">= {GOAL_SPEEDUP:g}x",
                    meets_target=ratio >= GOAL_SPEEDUP,
                )
            )
        else:
            speed.append(
                dict(base, peer="no peer measured", peer_n="-", target=f">= {GOAL_SPEEDUP:g}x", meets_target="n/a")
            )
        for var in (r for r in peer_ok if r["oracle"] == row["oracle"] and r["k"] == row["k"] and r["variant"]):
            speed.append(
                dict(
                    base,
                    peer=f"{var['library']} {var['api'].split('(')[0]} [variant]",
                    peer_n=var["n"],
                    peer_ns_per_report=var["ns_per_report"],
                    speedup=var["ns_per_report"] / row["ns_per_report"],
                    target="not counted (variant)",
                    meets_target="n/a",
                )
            )
    report("oracles_speedup", compact(speed), args.out)

    # ---------------------------------------------------------------- MSE
    section(
        f"MSE over {args.mse_reps} replications against the exact variance (k = {args.mse_k}, Zipf(1.1) prior, "
        f"false-failure probability <= {args.alpha:g} per check)",
        t_start,
    )
    prior = zipf(args.mse_k)
    mse: list[dict] = []
    for name in names:
        mech = build_ldpsim(name, args.mse_k, eps)
        if mech is None:
            continue
        err = mse_ldpsim(mech, prior, args.mse_n, args.mse_reps, seq(args.seed, "mse", name))
        mse.append(mse_row("ldpsim", name, repr(mech), mech, prior, args.mse_n, err, args.alpha))
        print(
            f"  ldpsim {name:20s} ratio {mse[-1]['ratio']:.4f} in [{mse[-1]['lower_ratio']:.4f}, "
            f"{mse[-1]['upper_ratio']:.4f}]: {mse[-1]['verdict']}",
            flush=True,
        )
    for case in cases:
        if case.reference is None or (case.ks is not None and args.mse_k not in case.ks):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                err, shipped = mse_peer(
                    case, prior, args.mse_peer_n, args.mse_reps, seq(args.seed, "mse", case.library, case.label)
                )
        except Exception as exc:  # noqa: BLE001
            mse.append(
                dict(
                    benchmark="oracles",
                    case=f"{case.library} {case.oracle}",
                    library=case.library,
                    oracle=case.oracle,
                    peer_api=case.label,
                    verdict=f"error: {type(exc).__name__}: {exc}"[:300],
                )
            )
            continue
        ref = case.reference(args.mse_k)
        default = build_ldpsim(case.oracle, args.mse_k, eps)
        if ref != default:
            label = f"{case.label} (reference {ref!r} differs from ldpsim's default {default!r})"
        else:
            label = case.label
        mse.append(mse_row(case.library, case.oracle, label, ref, prior, args.mse_peer_n, err, args.alpha))
        print(
            f"  {case.library:15s} {case.oracle:20s} ratio {mse[-1]['ratio']:.4f} in [{mse[-1]['lower_ratio']:.4f}, "
            f"{mse[-1]['upper_ratio']:.4f}]: {mse[-1]['verdict']}",
            flush=True,
        )
        if shipped is not None:
            mse.append(
                mse_row(
                    case.library,
                    case.oracle,
                    case.label + " shipped (clipped, renormalised)",
                    ref,
                    prior,
                    args.mse_peer_n,
                    shipped,
                    args.alpha,
                    checked=False,
                )
            )
            mse[-1]["case"] += " (shipped)"
    report("oracles_mse", compact(mse), args.out)
    print("legend (a peer's API -> the ldpsim oracle whose exact covariance is its reference; ldpsim rows: their own):")
    for line in dict.fromkeys(
        f"  {r['case']}: {r.get('peer_api', '')} -> {r.get('reference', '')}" for r in mse if r["library"] != "ldpsim"
    ):
        print(line)

    # ---------------------------------------------------------------- aggregate mode
    section(
        f"aggregate mode: {args.agg_n:.3g} respondents, k = {args.agg_k}, exact draw of the server's statistic", t_start
    )
    agg_sq = seq(args.seed, "aggregate")
    counts = np.random.default_rng(agg_sq.spawn(1)[0]).multinomial(args.agg_n, zipf(args.agg_k)).astype(np.int64)
    assert int(counts.sum()) == args.agg_n
    agg: list[dict] = []
    draws: dict[str, Callable[[], object]] = {}
    for name in names:
        mech = build_ldpsim(name, args.agg_k, eps)
        if mech is None:
            continue
        if not mech.aggregate_exact:
            agg.append(
                dict(
                    benchmark="oracles",
                    case=f"ldpsim {name}",
                    oracle=name,
                    n=args.agg_n,
                    k=args.agg_k,
                    remark="no exact aggregate law (aggregate_exact = False): individual mode only",
                )
            )
            continue
        gen = np.random.default_rng(seq(args.seed, "aggregate", name))
        mech.sample_statistic(counts, gen)  # warm-up
        draws[name] = lambda mech=mech, gen=gen: mech.sample_statistic(counts, gen)
    best = best_of(draws, args.repeats)
    for name, s in best.items():
        mech = build_ldpsim(name, args.agg_k, eps)
        stat = draws[name]()
        s_est, _ = timed(lambda: mech.invert(stat / args.agg_n))
        agg.append(
            dict(
                benchmark="oracles",
                case=f"ldpsim {name}",
                oracle=name,
                n=args.agg_n,
                k=args.agg_k,
                m=mech.statistic_size,
                seconds=s,
                estimate_s=s_est,
                target=f"< {AGG_TARGET_S:g} s",
                meets_target=s < AGG_TARGET_S,
                goal="named in the goal" if name in AGG_GOAL else "extra",
            )
        )
    report("oracles_aggregate", compact(agg), args.out)

    # ---------------------------------------------------------------- memory
    section("memory: OLH, k = 4096, privatise + statistic + estimate in batches, fresh subprocess", t_start)
    if not memory:  # k = 4096 not among --ks: run it here
        for n in args.memory_n:
            res = run_memory_child("olh", 4096, n, args)
            memory.append(
                dict(
                    benchmark="oracles",
                    case="ldpsim olh privatise + statistic + estimate",
                    n=n,
                    k=4096,
                    batch=args.batch,
                    seconds=res["seconds"],
                    rss_start_mib=res["rss_start_mib"],
                    rss_peak_mib=res["rss_peak_mib"],
                    run_extra_mib=res["run_extra_mib"],
                    method=res["memory_method"],
                )
            )
    report("oracles_memory", memory, args.out)

    # ---------------------------------------------------------------- summary
    section("summary", t_start)
    misses = [r for r in speed if r.get("meets_target") is False]
    compared = [r for r in speed if r.get("meets_target") is True or r.get("meets_target") is False]
    no_peer = sorted({(r["oracle"], r["k"]) for r in speed if r.get("peer") == "no peer measured"})
    fails = [r for r in mse if str(r.get("verdict", "")).startswith(("FAIL", "error"))]
    slow = [r for r in agg if r.get("meets_target") is False]
    errors = [r for r in timing if r.get("status", "ok") != "ok"]
    print(
        f"speed goal (>= {GOAL_SPEEDUP:g}x the fastest same-definition peer): "
        + (
            "not evaluated: no same-definition peer measured"
            if not compared
            else f"met in all {len(compared)} compared cases"
            if not misses
            else "MISSED for "
            + ", ".join(
                f"{r['oracle']} k={r['k']} n={r['ldpsim_n']} ({r['speedup']:.2f}x vs {r['peer']})" for r in misses
            )
        )
    )
    if no_peer:
        print("  no same-definition peer measured for: " + ", ".join(f"{o} k={k}" for o, k in no_peer))
    print(
        "MSE within the exact-variance tolerance: "
        + (
            "every check passed"
            if not fails
            else "FAILED: " + ", ".join(f"{r['case']} ({r['verdict']})" for r in fails)
        )
    )
    print(
        f"aggregate draw under {AGG_TARGET_S:g} s: "
        + ("all" if not slow else "SLOW: " + ", ".join(f"{r['oracle']} ({r['seconds']:.2f} s)" for r in slow))
        + "; "
        + ", ".join(f"{r['oracle']} {r['seconds'] * 1e3:.1f} ms" for r in agg if "seconds" in r)
    )
    for r in memory:
        print(
            f"OLH memory at n = {r['n']:.0e}, k = 4096: peak RSS {r['rss_peak_mib']:.0f} MiB, of which "
            f"{r['run_extra_mib']:.0f} MiB above the {r['rss_start_mib']:.0f} MiB at the start ({r['method']})"
        )
    for r in errors:
        print(f"peer error: {r['case']} k={r['k']}: {r['status']}")
    variants = sorted({(r["library"], r["api"], r["variant"]) for r in timing if r.get("variant")})
    for lib, api, var in variants:
        print(f"variant (not counted): {lib} {api}: {var}")
    load_after = os.getloadavg()
    wall = time.perf_counter() - t_start
    print(f"wall time {wall:.0f} s; load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end")

    if args.json is not None:
        payload = dict(
            config={k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "child"},
            python=platform.python_version(),
            numpy=np.__version__,
            peers=peer_status,
            versions=peer_versions(),
            cpus=os.cpu_count(),
            load_average=dict(start=load_before, end=load_after),
            wall_seconds=wall,
            timing=timing,
            speedup=speed,
            mse=mse,
            aggregate=agg,
            memory=memory,
        )
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1, default=_json_default))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
