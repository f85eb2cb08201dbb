"""Exact samplers of discrete noise with integer arithmetic only (Canonne, Kamath and Steinke
2020, "The Discrete Gaussian for Differential Privacy", Algorithms 1-3).

Every decision is an exact comparison of uniform integers drawn with
``source.integers(low, high, size)``, where ``source`` is a :class:`numpy.random.Generator`
or :class:`ldpsim._rng.SystemRandom`; no float enters a decision, so the law sampled is
exactly the law stated, whatever the source (floats only size the batches). The same numpy
seed gives the same draws.

* :func:`bernoulli_exp` -- Bernoulli(exp(-num/den)) for integers ``num >= 0``, ``den >= 1``;
* :func:`discrete_laplace` -- ``Lap_Z(t/s)``: ``P(z)`` proportional to ``exp(-|z| s/t)``;
* :func:`discrete_gaussian` -- ``N_Z(0, sigma2)``: ``P(z)`` proportional to
  ``exp(-z^2/(2 sigma2))``, ``sigma2`` a positive rational.

Vectorised: the loops run over rounds of the algorithms, on the elements still active, never
over elements. Integers stay in int64 where a bound (in the comments) shows they fit below
2^62; elsewhere the elements concerned go through Python integers (object arrays).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldpsim._rng import RNGLike, SystemRandom, as_source
from ldpsim.errors import invalid

__all__ = ["bernoulli_exp", "discrete_laplace", "discrete_gaussian"]

#: int64 values are kept at or below this bound (products are checked against it)
_LIMIT = 1 << 62
#: largest Laplace scale t/s the sampler accepts (and sigma, as sigma2 <= 2^80): draws stay
#: far below 2^62 (a draw beyond 2^62 needs about 2^22 scales: probability below e^-(4 10^6))
#: and exact as float64 reports (beyond 2^53: 2^13 scales, probability below e^-8000)
MAX_EXACT_SCALE = 1 << 40
_WORD = 1 << 62
_U32 = 1 << 32
#: largest batch of candidates drawn at once: arrays that stay in cache (2^18 was the fastest
#: of 2^16 .. 2^23 measured; larger batches are slower)
_BATCH = 1 << 18


# --------------------------------------------------------------------------- Bernoulli(p)
def _bern_ratio(num: Any, den: Any, source: Any) -> NDArray[np.bool_]:
    """Bernoulli(num/den) elementwise, ``0 <= num <= den``. int64 arrays (``den`` an array
    or a scalar, at most 2^62): one uniform integer in ``[0, den)`` compared with ``num``.
    Object arrays (Python ints of any size): a uniform ``U`` in [0, 1) compared with
    ``num/den`` 62 binary digits at a time (a digit word ``W`` decides unless it equals
    ``floor(2^62 num/den)``, probability 2^-62; then the comparison continues with the
    remainder), so the numbers never need a uniform integer beyond 2^62."""
    if isinstance(num, np.ndarray) and num.dtype == object or isinstance(den, np.ndarray) and den.dtype == object:
        num = np.asarray(num, dtype=object)
        n = num.shape[0]
        den = np.broadcast_to(np.asarray(den, dtype=object), (n,))
        out = np.zeros(n, dtype=bool)
        idx = np.arange(n)
        cur = num
        while idx.size:
            scaled = cur * _WORD
            q = scaled // den
            r = scaled - q * den
            w = source.integers(0, _WORD, size=idx.size).astype(object)
            decided = w != q
            out[idx[decided]] = (w < q)[decided]
            keep = ~decided
            idx, cur, den = idx[keep], r[keep], den[keep]
        return out
    if np.ndim(den) == 0:
        den = int(den)  # 32-bit draws where the range allows (numpy's faster path; same law)
        return source.integers(0, den, size=np.shape(num)[0], dtype=np.uint32 if den <= _U32 else np.int64) < num
    return source.integers(0, den) < num


def _bern_exp_le1(num: Any, den: Any, source: Any) -> NDArray[np.bool_]:
    """CKS Algorithm 1 for ``gamma = num/den`` in [0, 1]: draw ``A_k ~ Bernoulli(gamma/k)`` for
    k = 1, 2, ... until the first failure at ``k = K``; return ``K`` odd. ``P(K > k) =
    gamma^k/k!``, so ``P(K odd) = sum_k (-gamma)^k/k! = exp(-gamma)``. ``Bernoulli(gamma/k)``
    is ``Bernoulli(num/(den k))`` in one draw when ``den k <= 2^62`` (int64), else
    ``Bernoulli(num/den)`` AND ``Bernoulli(1/k)`` (two independent draws, the same law)."""
    big = isinstance(num, np.ndarray) and num.dtype == object or isinstance(den, np.ndarray) and den.dtype == object
    scalar_den = np.ndim(den) == 0
    if scalar_den:
        den = int(den)
    a = _bern_ratio(num, den, source)  # k = 1: a failure gives K = 1, odd
    out = ~a
    idx = np.flatnonzero(a)
    num = num[idx]
    if not scalar_den:
        den = den[idx]
    k = 2
    while idx.size:
        if big:
            a = _bern_ratio(num, den * k, source)
        else:
            top = den if scalar_den else int(den.max())
            if top <= _LIMIT // k:  # den k <= 2^62: one draw
                a = _bern_ratio(num, den * k, source)
            else:
                a = _bern_ratio(num, den, source) & (source.integers(0, k, size=idx.size) == 0)
        if k % 2 == 1:
            out[idx[~a]] = True
        idx, num = idx[a], num[a]
        if not scalar_den:
            den = den[a]
        k += 1
    return out


#: Bernoulli(exp(-1)) in one draw: Algorithm 1 at gamma = 1 stops at K with P(K > k) = 1/k!,
#: and 1/k! = (N/k!)/N exactly for k <= 12 with N = 12! (< 2^32, numpy's 32-bit path), so
#: K > k iff W < N/k! for one uniform W in [0, N) -- the sequential draws of Bernoulli(1/k)
#: give the same law; past k = 12 (W = 0) the sequential draws continue
_FACT_K = 12
_FACT_N = math.factorial(_FACT_K)
_FACT_THRESH = np.array([_FACT_N // math.factorial(k) for k in range(_FACT_K, 0, -1)], dtype=np.uint32)  # ascending


def _bern_exp_minus1(n: int, source: Any) -> NDArray[np.bool_]:
    """n draws of Bernoulli(exp(-1)) (CKS Algorithm 1 at gamma = 1, result ``K`` odd): ``K = 1 +
    #{k <= 12 : W < 12!/k!}`` from one uniform ``W`` of ``[0, 12!)``; when ``W = 0`` (K > 12,
    probability 1/12!) the sequential draws of Bernoulli(1/k), k = 13, 14, ..., continue."""
    w = source.integers(0, _FACT_N, size=n, dtype=np.uint32)
    # K = 2 (W >= N/2): 0; K = 3 (N/6 <= W < N/2): 1; the rest (W < N/24 with K >= 5, or
    # N/24 <= W < N/6 with K = 4: 0) by counting thresholds, on the 1/24 of draws below N/24
    out = (w < _FACT_N // 2) & (w >= _FACT_N // 6)
    low = np.flatnonzero(w < _FACT_N // 24)
    kl = 1 + (_FACT_K - np.searchsorted(_FACT_THRESH, w[low], side="right"))
    out[low] = (kl % 2) == 1
    rest = low[kl > _FACT_K]  # W = 0
    j = _FACT_K + 1
    while rest.size:
        a = source.integers(0, j, size=rest.size) == 0
        out[rest[~a]] = j % 2 == 1
        rest = rest[a]
        j += 1
    return out


def _bern_exp(num: Any, den: Any, source: Any) -> NDArray[np.bool_]:
    """Bernoulli(exp(-num/den)), any num >= 0 (CKS Algorithm 1): for gamma > 1,
    ``floor(gamma)`` independent Bernoulli(exp(-1)) (stopping at the first 0) and then
    Bernoulli(exp(-frac(gamma))); the product has mean exp(-gamma)."""
    n = np.shape(num)[0]
    if n == 0:
        return np.zeros(0, dtype=bool)
    whole = num // den
    frac = num - whole * den
    alive = np.ones(n, dtype=bool)
    todo = np.flatnonzero(whole > 0)
    j = 1
    while todo.size:
        ok = _bern_exp_minus1(todo.size, source)
        alive[todo[~ok]] = False
        todo = todo[ok]
        todo = todo[whole[todo] > j]
        j += 1
    out = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(alive)
    if idx.size:
        d = den if np.ndim(den) == 0 else den[idx]
        out[idx] = _bern_exp_le1(frac[idx], d, source)
    return out


def _as_ints(values: ArrayLike, name: str, minimum: int) -> NDArray[Any]:
    """A 1-D array of integers >= minimum: int64 when every value is at most 2^62, else
    Python ints (object)."""
    arr = np.asarray(values)
    where = (lambda i: f"{name}[{i}]") if arr.ndim else (lambda i: name)
    if arr.dtype.kind in "iu":  # numpy integers: checked vectorised
        flat = arr.reshape(-1)
        bad = np.flatnonzero(flat < minimum)
        if bad.size:
            raise invalid(where(int(bad[0])), flat[bad[0]].item(), f"an integer >= {minimum}")
        if flat.size and int(flat.max()) > _LIMIT:
            return np.array([int(x) for x in flat.tolist()], dtype=object)
        return flat.astype(np.int64)
    if arr.dtype != object:
        raise invalid(where(0), arr.reshape(-1)[0].item() if arr.size else values, f"an integer >= {minimum}")
    items = arr.reshape(-1).tolist()
    for i, x in enumerate(items):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or int(x) < minimum:
            raise invalid(where(i), x, f"an integer >= {minimum}")
    if items and max(int(x) for x in items) > _LIMIT:
        return np.array([int(x) for x in items], dtype=object)
    return np.array(items, dtype=np.int64).reshape(-1)


def bernoulli_exp(num: ArrayLike, den: ArrayLike, source: "RNGLike | str | SystemRandom" = None) -> NDArray[np.bool_]:
    """Exact Bernoulli(exp(-num/den)) draws, elementwise over the broadcast of the integer
    arrays ``num >= 0`` and ``den >= 1`` (CKS 2020, Algorithm 1). Integers of any size
    (Python ints beyond 2^62 go through exact big-integer comparisons). ``source``: a numpy
    Generator, ``"os"`` / :class:`~ldpsim._rng.SystemRandom`, or anything
    :func:`numpy.random.default_rng` accepts. Returns a bool array of the broadcast shape."""
    src = as_source(source)
    shape = np.broadcast_shapes(np.shape(num), np.shape(den))
    a = _as_ints(np.broadcast_to(np.asarray(num), shape), "num", 0)
    b = _as_ints(np.broadcast_to(np.asarray(den), shape), "den", 1)
    if a.dtype == object or b.dtype == object:  # both as Python ints
        a = np.array([int(x) for x in a], dtype=object)
        b = np.array([int(x) for x in b], dtype=object)
    return _bern_exp(a, b, src).reshape(shape)


# --------------------------------------------------------------------------- discrete Laplace
def _uniform_below(t: int, m: int, source: Any) -> NDArray[Any]:
    """m uniform integers in [0, t): int64 for t <= 2^62, else Python ints built from 62-bit
    words (the top word masked to the bit length of t, values >= t drawn again)."""
    if t <= _LIMIT:
        return source.integers(0, t, size=m)
    bits = t.bit_length()
    words = -(-bits // 62)
    out = np.empty(m, dtype=object)
    todo = np.arange(m)
    top_bits = bits - 62 * (words - 1)
    while todo.size:
        x = source.integers(0, 1 << top_bits, size=todo.size).astype(object)
        for _ in range(words - 1):
            x = x * _WORD + source.integers(0, _WORD, size=todo.size).astype(object)
        ok = x < t
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    return out


def _geometric_e1(m: int, source: Any) -> NDArray[np.int64]:
    """m draws of V with P(V >= v) = exp(-v): the number of Bernoulli(exp(-1)) successes
    before the first failure."""
    ok = _bern_exp_minus1(m, source)
    v = ok.astype(np.int64)
    idx = np.flatnonzero(ok)
    while idx.size:
        ok = _bern_exp_minus1(idx.size, source)
        idx = idx[ok]
        v[idx] += 1
    return v


def _laplace_candidates(s: int, t: int, m: int, source: Any) -> NDArray[np.int64]:
    """One round of CKS Algorithm 2 on m candidates; returns the accepted ones, in order.

    U uniform in {0..t-1}, kept with probability exp(-U/t); V with P(V >= v) = e^-v;
    X = U + t V (then P(X = x) is proportional to exp(-x/t)); Y = floor(X/s); a sign bit B;
    the candidate (B = 1, Y = 0) is rejected (else 0 would count twice). Accepted
    candidates are ``(1 - 2B) Y``, of law Lap_Z(t/s)."""
    if 2 * t <= _LIMIT:  # U and the sign B from one uniform integer of [0, 2t)
        x = source.integers(0, 2 * t, size=m, dtype=np.uint32 if 2 * t <= _U32 else np.int64)
        neg = (x & 1).astype(bool)
        u = x >> 1
    else:
        u = _uniform_below(t, m, source)
        neg = source.integers(0, 2, size=m).astype(bool)
    idx = np.flatnonzero(_bern_exp_le1(u, t, source))  # V, X and Y only for the candidates kept
    v = _geometric_e1(idx.size, source)
    uk, nk = u[idx], neg[idx]
    vmax = int(v.max()) if idx.size else 0
    if uk.dtype != object and s <= _LIMIT and t * (vmax + 1) <= _LIMIT:
        # X = U + t V < t (V + 1) <= 2^62: int64
        y = (uk + t * v) // s
    else:
        x = uk.astype(object) + t * v.astype(object)
        # |Y| <= X/s < (V + 1) t/s; t/s <= 2^40 and V < 2^21 except with probability e^-(2^21)
        y = np.array([int(z) for z in x // s], dtype=np.int64)
    good = ~(nk & (y == 0))
    y, nk = y[good], nk[good]
    np.negative(y, out=y, where=nk)
    return y


def _check_size(size: Any) -> tuple[tuple[int, ...], int]:
    if size is None:
        return (), 1
    shape = (size,) if np.ndim(size) == 0 else tuple(size)
    try:
        shape = tuple(int(k) for k in shape)
    except (TypeError, ValueError):
        raise invalid("size", size, "an integer >= 0 or a tuple of them") from None
    if any(k < 0 for k in shape):
        raise invalid("size", size, "an integer >= 0 or a tuple of them")
    return shape, int(np.prod(shape, dtype=np.int64))


def _positive_int(x: object, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or int(x) < 1:
        raise invalid(name, x, "an integer >= 1")
    return int(x)


def _fill(n: int, rate: float, draw: Any) -> NDArray[np.int64]:
    """Accepted candidates in order until n: batches of about (shortfall / rate) candidates
    (at most _BATCH), repeated for the shortfall; ``draw(m)`` returns the accepted values of
    m candidates, in order."""
    out = np.empty(n, dtype=np.int64)
    got = 0
    while got < n:
        need = n - got
        m = min(_BATCH, int(need / rate * 1.03) + 64)
        acc = draw(m)
        take = min(acc.size, need)
        out[got : got + take] = acc[:take]
        got += take
    return out


def _laplace_rate(s: int, t: int) -> float:
    """Probability that a candidate of Algorithm 2 is accepted (float: batch sizing only)."""
    keep = 1.0 if t == 1 else -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))
    return keep * (1.0 + math.exp(-s / t)) / 2.0


def discrete_laplace(s: int, t: int, size: Any = None, source: "RNGLike | str | SystemRandom" = None) -> Any:
    """Exact draws of the discrete Laplace ``Lap_Z(t/s)`` (``P(z)`` proportional to
    ``exp(-|z| s/t)`` on the integers) by CKS 2020, Algorithm 2, vectorised over batches of
    candidates. ``s``, ``t``: integers >= 1 with ``t/s <= 2^40``. ``size``: numpy size (None:
    one int). ``source``: numpy Generator / seed / ``"os"``. Returns int64."""
    s = _positive_int(s, "s")
    t = _positive_int(t, "t")
    if t > MAX_EXACT_SCALE * s:
        raise invalid(
            "t", t, f"an integer with t/s <= 2^40 (s = {s}): larger discrete Laplace scales are not supported"
        )
    shape, n = _check_size(size)
    src = as_source(source)
    g = math.gcd(s, t)
    s, t = s // g, t // g
    out = _fill(n, _laplace_rate(s, t), lambda m: _laplace_candidates(s, t, m, src))
    return int(out[0]) if size is None else out.reshape(shape)


# --------------------------------------------------------------------------- discrete Gaussian
def _as_fraction(sigma2: object) -> Fraction:
    if isinstance(sigma2, bool):
        raise invalid("sigma2", sigma2, "a positive rational (Fraction, int, float or 'p/q')")
    try:
        if isinstance(sigma2, (Fraction, int, np.integer)):
            f = Fraction(int(sigma2)) if isinstance(sigma2, np.integer) else Fraction(sigma2)
        elif isinstance(sigma2, (float, np.floating)):
            if not math.isfinite(float(sigma2)):
                raise ValueError
            f = Fraction(float(sigma2))
        elif isinstance(sigma2, str):
            f = Fraction(sigma2.strip())
        else:
            raise TypeError
    except (TypeError, ValueError, ZeroDivisionError):
        raise invalid("sigma2", sigma2, "a positive rational (Fraction, int, float or 'p/q')") from None
    if f <= 0:
        raise invalid("sigma2", sigma2, "a positive rational (Fraction, int, float or 'p/q')")
    return f


class _GaussianPlan:
    """The integers of the discrete Gaussian sampler for ``sigma2 = p/q`` (lowest terms).

    Proposal ``Y ~ Lap_Z(tau)`` and acceptance ``Bernoulli(exp(-(|Y| - m)^2/(2 sigma2)))``
    with ``tau m = sigma2``: then ``P(Y = y) P(accept | y)`` is proportional to
    ``exp(-|y|/tau - (|y| - m)^2/(2 sigma2)) = exp(-y^2/(2 sigma2)) exp(-m^2/(2 sigma2))``,
    so an accepted Y is ``N_Z(0, sigma2)`` (CKS 2020, Algorithm 3, any tau > 0 works).

    * sigma < 1: CKS's choice ``tau = t = floor(sigma) + 1 = 1``, ``m = sigma2``; exponent
      ``(q |Y| - p)^2 / (2 p q)``.
    * sigma >= 1: the integer shift ``m = c = round(sigma)`` and ``tau = sigma2/c =
      p/(q c)`` (CKS with the roles of t and sigma2/t exchanged): exponent
      ``q (|Y| - c)^2 / (2 p)``, much smaller integers than CKS's
      ``(q t |Y| - p)^2 / (2 p q t^2)`` (int64 up to sigma2 = 10^12 for q <= 1024), and
      about the same acceptance rate: in the continuum approximation ``1.25 x e^(-x^2/2)``
      per Laplace draw, ``x = c/sigma`` in [2/3, 3/2], so at least 0.6 (0.75 measured at
      sigma = 3.7 and 100).
    """

    def __init__(self, sigma2: Fraction) -> None:
        p, q = sigma2.numerator, sigma2.denominator
        self.p, self.q = p, q
        if p < q:  # sigma < 1
            self.small = True
            self.s, self.t = 1, 1
            self.a, self.b = 1, 2 * p * q  # exponent (q|Y| - p)^2 / (2 p q)
        else:
            self.small = False
            c = math.isqrt(p // q)  # floor(sigma)
            if 4 * p >= q * (2 * c + 1) ** 2:  # sigma >= c + 1/2
                c += 1
            self.c = c
            g = math.gcd(q * c, p)
            self.s, self.t = q * c // g, p // g  # tau = p/(q c)
            g2 = math.gcd(q, 2 * p)
            self.a, self.b = q // g2, 2 * p // g2  # exponent a (|Y| - c)^2 / b
        sig = math.sqrt(p / q)
        tau = self.t / self.s
        shift = (p / q) / tau
        # acceptance per Laplace candidate (float: batch sizing only)
        lap_norm = (1.0 + math.exp(-1.0 / tau)) / -math.expm1(-1.0 / tau)
        theta = (
            sum(math.exp(-(z * z) / (2 * p / q)) for z in range(-12, 13)) if sig < 1 else math.sqrt(2 * math.pi) * sig
        )
        self.rate = _laplace_rate(self.s, self.t) * max(theta * math.exp(-shift * shift / (2 * p / q)) / lap_norm, 1e-3)

    def draw(self, m: int, source: Any) -> NDArray[np.int64]:
        """The accepted values (in order) of m discrete Laplace candidates."""
        y = _laplace_candidates(self.s, self.t, m, source)
        ay = np.abs(y)
        if self.small:
            p, q = self.p, self.q
            # int64 when b = 2 p q <= 2^62 (so p < 2^31, as p < q) and q |Y| <= 2^31: then
            # |q |Y| - p| <= 2^31 and the square is at most 2^62; else Python ints
            if self.b <= _LIMIT and ay.size and int(ay.max()) <= (1 << 31) // q:
                d = q * ay - p
                num = d * d
                den: int | NDArray[Any] = self.b
            else:
                d = ay.astype(object) * q - p
                num = d * d
                den = np.full(y.size, self.b, dtype=object)
        else:
            d = ay - self.c
            # int64 when b <= 2^62 (then a <= q <= p < 2^62) and a d^2 <= 2^62; else Python ints
            lim = math.isqrt(_LIMIT // self.a) if self.a <= _LIMIT else 0
            if self.b <= _LIMIT and ay.size and int(np.abs(d).max()) <= lim:
                num = self.a * d * d  # a d^2 <= a (2^62 / a) = 2^62
                den = self.b
            else:
                do = d.astype(object)
                num = do * do * self.a
                den = np.full(y.size, self.b, dtype=object)
        return y[_bern_exp(num, den, source)] if y.size else y


def discrete_gaussian(sigma2: Any, size: Any = None, source: "RNGLike | str | SystemRandom" = None) -> Any:
    """Exact draws of the discrete Gaussian ``N_Z(0, sigma2)`` (``P(z)`` proportional to
    ``exp(-z^2/(2 sigma2))`` on the integers) by CKS 2020, Algorithm 3: discrete Laplace
    proposals accepted with an exact ``Bernoulli(exp(-(|Y| - m)^2/(2 sigma2)))``, every
    quantity an integer over a common denominator (:class:`_GaussianPlan`). ``sigma2``: a
    positive rational (Fraction, int, float -- its exact binary value -- or ``"p/q"``), at
    most 2^80. Returns int64 of the numpy ``size`` (None: one int)."""
    f = _as_fraction(sigma2)
    if f > 2**80:
        raise invalid("sigma2", sigma2, "a positive rational at most 2^80")
    shape, n = _check_size(size)
    src = as_source(source)
    plan = _GaussianPlan(f)
    out = _fill(n, plan.rate, lambda m: plan.draw(m, src))
    return int(out[0]) if size is None else out.reshape(shape)


# --------------------------------------------------------------------------- mechanisms
class ExactSampling:
    """Mixin of the exact discrete noise mechanisms: their ``_sample(size, source)`` draws
    int64 noise from uniform integers only, so ``sample``, ``sample_noise`` and
    ``privatize`` (of :class:`~ldpsim.mechanisms.noise.NoiseMechanism`) also accept
    ``rng="os"`` (or a :class:`~ldpsim._rng.SystemRandom`) besides the numpy ``rng=``
    convention."""

    def _random_source(self, rng: Any) -> Any:
        return as_source(rng)
