"""The statistics and bands of a comparison (``docs/regressions.md``): the paired Poisson
bootstrap, the sign-flip permutation test, and the history, replicate and control-chart bands."""
from __future__ import annotations

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
