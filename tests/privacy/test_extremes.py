"""Composition and its bounds at extreme parameters (issue 14): eps from 1e-300 to 800, k up
to 10^9. Every call returns a correct number (closed forms computed here, in mpmath where
the float arithmetic would under- or overflow) or one LdpSimError; never a warning."""

from __future__ import annotations

import warnings

import mpmath as mp
import pytest

from ldpsim.cli import main
from ldpsim.privacy import composition as C


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_compose_cli_at_eps_800_prints_the_table_without_a_warning(tmp_path, capsys):
    """Defect 11: ``ldpsim compose --eps 800 -k 3`` printed 'RuntimeWarning: overflow
    encountered in expm1' (the DRV term k eps (e^eps - 1)) beside a correct table."""
    assert main(["compose", "--eps", "800", "-k", "3", "--out", str(tmp_path / "c"), "--no-figure"]) == 0
    captured = capsys.readouterr()
    assert "Warning" not in captured.err and "Warning" not in captured.out
    table = (tmp_path / "c" / "table.csv").read_text().splitlines()
    assert table[0].split(",")[:4] == ["eps_total", "exact", "basic", "drv"]
    # the loss is 2400 with probability (1 + e^-800)^-3 = 1 - 3e-800: exactly,
    # delta = 1 - e^{eps_t - 2400} (1 + O(e^-800)), which is 1 to double precision on the
    # default grid (multiples of 200) below 2400 and 0 at 2400; every bound agrees (the DRV
    # and Thm 3.4 centres k eps (e^eps - 1) and k eps tanh(eps/2) are >= k eps)
    rows = [[float(x) for x in row.split(",")] for row in table[1:]]
    assert [r[0] for r in rows] == [200.0 * i for i in range(1, 13)]
    for r in rows:
        assert r[1:] == [1.0 if r[0] < 2400 else 0.0] * (len(r) - 1), r


@pytest.mark.parametrize("eps", [700.0, 710.0, 800.0])
@pytest.mark.parametrize("k", [1, 3, 10**6, 10**9])
def test_drv_bound_when_e_to_the_eps_overflows(eps, k):
    """k eps (e^eps - 1) is +inf in floats (no warning): the DRV bound is the basic one."""
    for ds in (1e-300, 0.5, 1.0):
        e_t, d_t = C.drv_bound(eps, 0.0, k, ds)
        assert e_t == k * eps and d_t == ds
    grid = [0.0, eps, k * eps]
    assert C.bound_delta("drv", eps, 0.0, k, grid).tolist() == [1.0 if e < k * eps else 0.0 for e in grid]
    assert C.bound_epsilon("drv", eps, 0.0, k, [1e-300, 0.5]).tolist() == [k * eps] * 2


@pytest.mark.parametrize("name", ["drv", "kov", "kov_small_eps"])
@pytest.mark.parametrize("k", [10**6, 10**9])
def test_bound_delta_at_tiny_eps(name, k):
    """k eps^2 underflows to 0 at eps = 1e-300 (the gap^2 / (2 k eps^2) was 0/0): the bounds
    depend on eps_total/eps only. At eps_total = eps: delta = e^{-1/(2k)} (DRV: gap = eps -
    k eps (e^eps - 1) = eps to rounding; Thm 3.4: the centre k eps tanh(eps/2) ~ 0)."""
    eps = 1e-300
    got = C.bound_delta(name, eps, 0.0, k, [eps, 2 * eps, k * eps])
    with mp.workdps(30):
        ref = [float(mp.exp(-mp.mpf(1) / (2 * k))), float(mp.exp(-mp.mpf(4) / (2 * k)))]
    assert got[0] == pytest.approx(ref[0], rel=1e-12)
    assert got[1] == pytest.approx(ref[1], rel=1e-12)
    assert got[2] == 0.0  # eps_total = k eps: basic composition, delta 0


def test_per_query_budget_when_eps_over_delta_overflows():
    """log(e + eps/delta) with eps/delta = 8e322 (inf in floats) was inf, so eps0 = 0."""
    eps0, delta0 = C.per_query_budget(800.0, 1e-320, 10**9)
    with mp.workdps(40):
        ref = mp.mpf(800) / mp.sqrt(4 * 10**9 * mp.log(mp.e + mp.mpf(800) / mp.mpf(1e-320)))
    assert eps0 == pytest.approx(float(ref), rel=1e-13)
    assert delta0 == pytest.approx(1e-320 / 2e9, rel=0.1)  # subnormal
    e_t, _ = C.kov_bound(1e-3, 0.0, 10**9, 5e-324)  # sqrt(k eps^2)/delta_slack overflows too
    with mp.workdps(40):
        s2 = mp.mpf(10**9) * mp.mpf(1e-3) ** 2
        c = 10**9 * mp.mpf(1e-3) * mp.tanh(mp.mpf(1e-3) / 2)
        ds = mp.mpf(5e-324)
        ref = min(
            10**9 * mp.mpf(1e-3),
            c + mp.sqrt(2 * s2 * mp.log(mp.e + mp.sqrt(s2) / ds)),
            c + mp.sqrt(2 * s2 * mp.log(1 / ds)),
        )
    assert e_t == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("k", [10**6, 10**9])
def test_kov_bound_at_tiny_eps_is_not_zero(k):
    """Beyond the list (found by tests/test_api_edges.py): k eps^2 underflowed to 0 at
    eps = 1e-300, so Theorem 3.4 gave eps_total = 0 with delta_total = delta_slack -- an
    invalid bound (the exact delta at eps_total = 0 is ~4e-298 > 1e-300 at k = 10^6)."""
    eps, ds = 1e-300, 1e-300
    e_t, d_t = C.kov_bound(eps, 0.0, k, ds)
    with mp.workdps(40):
        e, s2 = mp.mpf(eps), k * mp.mpf(eps) ** 2
        c = k * e * mp.tanh(e / 2)
        ref = min(
            k * e, c + mp.sqrt(2 * s2 * mp.log(mp.e + mp.sqrt(s2) / ds)), c + mp.sqrt(2 * s2 * mp.log(1 / mp.mpf(ds)))
        )
    assert e_t == pytest.approx(float(ref), rel=1e-12) and d_t == ds
    assert C.optimal_delta(eps, 0.0, k, e_t) <= d_t  # a valid bound
    e_h, d_h = C.kov_bound_heterogeneous([eps, 2 * eps], [0.0, 0.0], ds)
    with mp.workdps(40):
        es = [mp.mpf(eps), 2 * mp.mpf(eps)]
        s2 = sum(x**2 for x in es)
        c = sum(x * mp.tanh(x / 2) for x in es)
        ref_h = min(
            sum(es), c + mp.sqrt(2 * s2 * mp.log(mp.e + mp.sqrt(s2) / ds)), c + mp.sqrt(2 * s2 * mp.log(1 / mp.mpf(ds)))
        )
    assert e_h == pytest.approx(float(ref_h), rel=1e-12) and d_h == pytest.approx(ds, rel=1e-12)


def test_optimal_epsilon_at_the_floor_of_delta():
    """1 - (1 - delta)^k was taken as exp(log(...)), 2e-14 too large at delta = 1e-300, so a
    target delta_total equal to the floor was refused as unreachable."""
    assert C.optimal_epsilon(1e-300, 1e-300, 1, 1e-300) <= 1e-300
    assert C.optimal_epsilon(1.0, 1e-300, 1, 1e-300) == pytest.approx(1.0, rel=1e-12)


def test_optimal_epsilon_at_a_billion_tiny_steps_is_exact_and_quick():
    """k = 10^9 at eps = 1e-300: the closed form inside the lattice piece lost the offset
    (x - x_lo ~ 1e-295 beside O(1) logs) and the fix-up walked ulp by ulp (70+ evaluations
    of O(sqrt(k)) terms, 6 s); now the offset keeps full relative precision."""
    import time

    t0 = time.process_time()  # CPU: the work done, whatever else the machine runs
    x = C.optimal_epsilon(1e-300, 0.0, 10**9, 1e-300)
    assert time.process_time() - t0 < 4.0
    assert C.optimal_delta(1e-300, 0.0, 10**9, x) <= 1e-300
    assert C.optimal_delta(1e-300, 0.0, 10**9, x * (1 - 1e-12)) > 1e-300
