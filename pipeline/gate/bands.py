"""The statistics and bands of a comparison (``docs/regressions.md``): the paired Poisson
bootstrap, the sign-flip permutation test, the history band (each example against its own
in-control history: a sign test whose false-alarm rate is stated per night, and the t prediction
interval of the mean drawn with it), and the replicate band."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from pipeline.gate.runs import CompareError
from pipeline.stats.poisson import example_bases, replicate_means

_CHUNK = 4096


def paired_bootstrap(keys: list[str], d: np.ndarray, seed: int, n_boot: int) -> np.ndarray:
    """Replicate means ``(n_boot, k)`` of the columns of ``d`` (n, k) under Poisson(1)
    weights derived from ``(seed, key, replicate)``; chunked over examples."""
    return replicate_means(example_bases(keys, seed), d, n_boot, _CHUNK)


def sign_flip_pvalues(d: np.ndarray, seed: int, n_perm: int) -> np.ndarray:
    """Two-sided paired permutation (sign-flip) p-value of every column of ``d`` (n, k)."""
    n, k = d.shape
    if n == 0:
        return np.full(k, np.nan)
    obs = np.abs(d.mean(axis=0))
    tol = 1e-12 * np.maximum(1.0, np.abs(d).max(axis=0))
    rng = np.random.Generator(np.random.PCG64(seed))
    hits = np.zeros(k, dtype=np.int64)
    per = max(1, min(n_perm, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_perm:
        m = min(per, n_perm - done)
        s = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2 - 1
        means = np.abs(s @ d) / n
        hits += (means >= obs[None, :] - tol).sum(axis=0)
        done += m
    return (1 + hits) / (1 + n_perm)


BAND_METHODS = {"sd": "control chart: mean +- k * sd (ddof 1) of the last N runs' means",
                "mad": "robust control chart: median +- k * 1.4826 * MAD of the last N runs' means"}
DEFAULT_METHOD = "sd"    # with N ~ 7-14 runs the MAD is too noisy a scale (docs/regressions.md)
DEFAULT_K = 4.0          # control-chart width in standard deviations
DEFAULT_WINDOW = 14      # the last N runs of the history
MIN_HISTORY = 5          # fewer runs holding the system: the paired-bootstrap band instead
DEFAULT_ALPHA = 0.01     # the history band: at most this share of unchanged nights alarm anywhere


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300

    def nz(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / nz(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))):
            d = 1.0 / nz(1.0 + num * d)
            c = nz(1.0 + num / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)``."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


@lru_cache(maxsize=1024)
def t_upper(p: float, df: int) -> float:
    """Student's t quantile with ``P(T > t) = p`` (``0 < p < 0.5``), by bisection on the tail."""
    def tail(t: float) -> float:
        return 0.5 * betainc(df / 2, 0.5, df / (df + t * t))

    lo, hi = 0.0, 1.0
    while tail(hi) > p:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) > p else (lo, mid)
    return (lo + hi) / 2


def binom_tail(k: int, n: int, p: float) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, p)``, summed in log space (exact for any n)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k, n + 1):
        term = math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
        total += term
        if i > k and term < total * 1e-17:
            break
    return min(1.0, total)


@lru_cache(maxsize=4096)
def fewest_to_alarm(n: int, p: float, level: float) -> int | None:
    """The fewest of ``n`` examples that must move one way for :func:`binom_tail` to reach ``level``
    (``None``: not even all ``n``)."""
    lo, hi = 0, n
    if binom_tail(n, n, p) > level:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if binom_tail(mid, n, p) > level else (lo, mid)
    return lo


def sign_test(history: np.ndarray, new: np.ndarray, level: float) -> dict:
    """Each compared example against its own in-control history: ``history`` (runs, n) holds the
    example's score in each run (NaN: not in that run), ``new`` (n,) tonight's.  The reference is
    each example's median over the runs; tonight's examples below (above) it are counted and held
    against a binomial whose rate is the share of history scores below (above) their reference
    (``(count + 1) / (total + 2)``), one-sided at ``level / 2`` each way.  Returns the counts, the
    p-values, the fewest that alarm (``need_down``/``need_up``), the reference mean and tonight's."""
    ref = np.nanmedian(history, axis=0)
    h = history - ref[None, :]
    seen = np.isfinite(h)
    total = int(seen.sum())
    r = new - ref
    n = int(len(r))
    out = {"n": n, "down": int((r < 0).sum()), "up": int((r > 0).sum()),
           "reference": float(ref.mean()) if n else float("nan"), "value": float(new.mean()) if n else float("nan")}
    for way, hist_way in (("down", h < 0), ("up", h > 0)):
        rate = (int((hist_way & seen).sum()) + 1) / (total + 2)
        out[f"rate_{way}"] = rate
        out[f"p_{way}"] = binom_tail(out[way], n, rate)
        out[f"need_{way}"] = fewest_to_alarm(n, rate, level / 2)
    return out


def prediction_band(values: list[float], level: float, window: int, method: str = DEFAULT_METHOD) -> dict:
    """Where the next in-control run's mean falls: ``centre +- t * scale * sqrt(1 + 1/n)`` over the
    last ``window`` means (``t``: Student's with ``n - 1`` df at ``level / 2`` each side; ``sd``:
    mean and sample sd, ``mad``: median and 1.4826 * MAD), clipped to [0, 1] (the scale of ROUGE)."""
    v = np.asarray(values[-window:], dtype=np.float64)
    chart = history_band(list(v), 1.0, window, method)
    n = len(v)
    half = t_upper(level / 2, n - 1) * chart["sd"] * math.sqrt(1 + 1 / n) if n > 1 else float("inf")
    chart.update(low=max(0.0, chart["centre"] - half), high=min(1.0, chart["centre"] + half), level=level)
    return chart


def history_band(values: list[float], k: float, window: int, method: str = DEFAULT_METHOD) -> dict:
    """The control chart of the last ``window`` means: centre and scale by ``method`` (``sd``: mean
    and sample sd; ``mad``: median and 1.4826 * MAD), band ``centre +- k * scale``."""
    v = np.asarray(values[-window:], dtype=np.float64)
    if method == "mad":
        centre = float(np.median(v))
        sd = float(1.4826 * np.median(np.abs(v - centre)))
    elif method == "sd":
        centre = float(v.mean())
        sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    else:
        raise CompareError(f"unknown band method {method!r} (sd, mad)")
    return {"centre": centre, "sd": sd, "low": centre - k * sd, "high": centre + k * sd, "n_runs": int(len(v))}


def replicate_band(values: list[float], k: float, centre: float | None = None) -> dict:
    """Run-to-run variation of the same build: ``mean +- k * sd`` (``ddof=1``) of the means."""
    v = np.asarray(values, dtype=np.float64)
    c = float(v.mean()) if centre is None else centre
    sd = float(v.std(ddof=1))
    return {"centre": c, "sd": sd, "low": c - k * sd, "high": c + k * sd, "n_runs": int(len(v))}


def outside_chart(value: float, b: dict, min_effect: float) -> bool:
    """Moved iff the value is strictly outside ``centre +- k*sd`` and at least ``min_effect``
    from the centre (so identical history, ``sd == 0``, alarms from ``min_effect`` on)."""
    dev = abs(value - b["centre"])
    return bool(value > b["high"] or value < b["low"]) and dev >= min_effect
