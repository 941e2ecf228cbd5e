"""Does metric variant A correlate better with the humans than variant B on this data?  ("is
ROUGE-2 recall better than ROUGE-L F for my data?")

Both are computed on the **same cells** (those where A, B and the human score are all finite)
and, under the bootstrap, on the same resamples (:mod:`.resample`: a replicate's draws depend on
the seed and its index only), so the test is paired:

* ``delta = r_A - r_B`` (the level's definition, :mod:`.levels`);
* its percentile interval over the replicates' ``delta*``;
* ``p_bootstrap`` (one-sided, H1: A correlates better): the null distribution is the bootstrap
  distribution shifted to mean 0, ``p = (1 + #{b : delta*_b - mean(delta*) >= delta - tol}) / (1 + B)``
  over the finite replicates, ``tol = 1e-12``; ``p_bootstrap_two_sided`` uses ``|.|`` on both sides;
* ``p_permutation`` (one-sided, H1: A correlates better; Deutsch et al.'s PERM test as nlpstats
  runs it): both columns standardized over their cells (``(x - mean) / sd``), trial ``t`` swaps A
  and B in every cell (``both``), every system's row (``systems``) or every document's column
  (``documents``) whose swap bit is set (the top bit of ``mix64(base + (t * units + unit + 1) *
  GAMMA)``, :mod:`.resample`'s stream with its own salt), ``p = (1 + #{t : delta_t >= delta - tol})
  / (1 + trials)`` over the trials where both correlations are defined;
* **Williams' test** (Pearson at the system or global level: one set of ``n`` items), for two
  dependent correlations sharing the human variable (Williams 1959; as in WMT's metrics task)::

      K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23
      t = (r12 - r13) sqrt((n - 1)(1 + r23)) / sqrt(2K (n - 1)/(n - 3) + (r12 + r13)^2 / 4 (1 - r23)^3)

  with ``r12 = r(A, human)``, ``r13 = r(B, human)``, ``r23 = r(A, B)``, one-sided ``p = P(T_{n-3} > t)``.
"""
from __future__ import annotations

import math

import numpy as np

from pipeline.errors import MetaError
from pipeline.meta import coefficients, levels
from pipeline.meta import resample as resampling
from pipeline.meta.api import check_options, human_frame, load_scores
from pipeline.meta.data import Judged, judged
from pipeline.meta.signature import correlation_signature
from pipeline.stats.keys import DEFAULT_SEED
from pipeline.stats.poisson import GAMMA, mix64, mix64_int, seed_key

SWAP_SALT = 0x5EED5A1755A1B005


def williams(r12: float, r13: float, r23: float, n: int) -> dict:
    """Williams' t for ``r12 > r13`` (see the module docstring), its degrees of freedom and one-sided p."""
    if n <= 3:
        return {"t": float("nan"), "df": n - 3, "p": float("nan")}
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    den = math.sqrt(2 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3)
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / den if den > 0 else float("nan")
    return {"t": t, "df": n - 3, "p": float(coefficients.scipy_stats().t.sf(t, n - 3))}


def swaps(seed: int, how: str, n_sys: int, n_docs: int, start: int, stop: int) -> np.ndarray:
    """``(stop - start, systems, documents)`` bool: the cells whose A and B trial ``t`` swaps."""
    units = {"both": n_sys * n_docs, "systems": n_sys, "documents": n_docs}[how]
    base = np.uint64(mix64_int(seed_key(seed) ^ SWAP_SALT))
    t = np.arange(start, stop, dtype=np.uint64)[:, None]
    with np.errstate(over="ignore"):
        u = mix64(base + (t * np.uint64(units) + np.arange(units, dtype=np.uint64)[None] + np.uint64(1))
                  * np.uint64(GAMMA))
    bit = (u >> np.uint64(63)) == 1
    if how == "both":
        return bit.reshape(-1, n_sys, n_docs)
    if how == "systems":
        return np.broadcast_to(bit[:, :, None], (stop - start, n_sys, n_docs))
    return np.broadcast_to(bit[:, None, :], (stop - start, n_sys, n_docs))


def permutation_pvalue(X: np.ndarray, H: np.ndarray, level: str, coefficient: str, delta: float, n_perm: int,
                       how: str, seed: int) -> tuple[float, int]:
    """``p_permutation`` and the trials it counts (see the module docstring); ``X``: (2, S, D)."""
    Z = np.stack([(x - np.nanmean(x)) / np.nanstd(x) for x in X])
    ones = np.ones((1, X.shape[1])), np.ones((1, X.shape[2]))
    code = resampling.CODES[coefficient]
    found = []
    for t0 in range(0, n_perm, 100):
        for sw in swaps(seed, how, X.shape[1], X.shape[2], t0, min(n_perm, t0 + 100)):
            trial = np.stack([np.where(sw, Z[1], Z[0]), np.where(sw, Z[0], Z[1])])
            r = resampling.Prepared(trial, H, level).run(*ones, code)[0]
            found.append(r[0] - r[1])
    d = np.array(found)
    d = d[np.isfinite(d)]
    return (1 + int((d >= delta - 1e-12).sum())) / (1 + len(d)), int(len(d))


def _items(data: Judged, level: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The A, B and human values of the level's items (system: means; global: cells)."""
    a, b, h = data.X[0], data.X[1], data.H
    if level == "system":
        ma, mh = levels.system_means(a, h)
        mb, _ = levels.system_means(b, h)
        return ma, mb, mh
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(h)
    return a[ok], b[ok], h[ok]


def compare_metrics(run_or_frame, human, a: str, b: str, field: str | None = None, level: str = "system",
                    coefficient: str = "kendall", doc_key: str | None = None, resample: str = "both",
                    n_boot: int = 1000, n_perm: int = 1000, confidence: float = 0.95, seed: int = DEFAULT_SEED,
                    workers: int = 1,
                    storage_options: dict | None = None, human_system: str = "system",
                    human_id: str = "id") -> dict:
    """Is column ``a`` (``rouge2_recall``) better correlated with the humans than ``b``
    (``rougeL_fmeasure``) at ``level`` by ``coefficient``?  ``n_perm``: permutation trials (0: none),
    swapping what ``resample`` resamples; the other options are :func:`correlate`'s."""
    check_options(level, coefficient, resample, n_boot, confidence, workers)
    coefficients.scipy_stats()
    if a == b:
        raise MetaError(f"compare_metrics: {a} against itself")
    scores, rouge_sig = load_scores(run_or_frame, storage_options)
    for c in (a, b):
        if c not in scores.columns:
            raise MetaError(f"compare_metrics: no column {c!r} in the scores")
    hum = human_frame(human, field, storage_options, human_system, human_id)
    data = judged(scores[["system", "id", a, b]], hum, doc_key)
    data = Judged(data.systems, data.docs, [a, b], data.X[[data.columns.index(a), data.columns.index(b)]], data.H,
                  data.n_examples, data.n_unmatched, data.n_unjudged)
    opts = dict(field=field, doc_key=doc_key, resample=resample, n_boot=n_boot, confidence=confidence, seed=seed)
    return _compare(data, a, b, level, coefficient, opts, rouge_sig, n_perm, workers)


def from_result(result, a: str, b: str, level: str, coefficient: str, n_perm: int = 1000, workers: int = 1) -> dict:
    """:func:`compare_metrics` on a :class:`pipeline.meta.CorrelationResult`'s data and settings
    (nothing read again); its bootstrap replicates of ``a`` and ``b`` are reused when they were
    computed on the same cells (neither column has a NaN the other lacks), else drawn again with
    the same seed: the same numbers as :func:`compare_metrics` either way."""
    if a == b:
        raise MetaError(f"compare_metrics: {a} against itself")
    for c in (a, b):
        if c not in result.columns:
            raise MetaError(f"compare_metrics: no column {c!r} in the scores")
    cfg = result.settings
    opts = {k: cfg[k] for k in ("field", "doc_key", "resample", "n_boot", "confidence", "seed")}
    data = result.data
    ia, ib = data.columns.index(a), data.columns.index(b)
    fa, fb = np.isfinite(data.X[ia]), np.isfinite(data.X[ib])
    boot = result.replicates.get((level, coefficient))
    reps = boot[:, [ia, ib]] if boot is not None and (fa == fb).all() else None
    pair = Judged(data.systems, data.docs, [a, b], data.X[[ia, ib]], data.H, data.n_examples, data.n_unmatched,
                  data.n_unjudged)
    return _compare(pair, a, b, level, coefficient, opts, cfg["rouge_signature"], n_perm, workers, reps)


def _compare(data: Judged, a: str, b: str, level: str, coefficient: str, opts: dict, rouge_sig: str, n_perm: int,
             workers: int, reps: np.ndarray | None = None) -> dict:
    """The test on ``data`` (its columns: ``a``, ``b``); ``reps``: their replicates when already drawn."""
    n_boot, resample, seed, confidence = opts["n_boot"], opts["resample"], opts["seed"], opts["confidence"]
    both = np.isfinite(data.X[0]) & np.isfinite(data.X[1])
    X = np.where(both[None], data.X, np.nan)
    data = Judged(data.systems, data.docs, [a, b], X, data.H, data.n_examples, data.n_unmatched, data.n_unjudged)
    fn = levels.LEVEL_FUNCTIONS[level]
    r_a, r_b = fn(X[0], data.H, coefficient)[0], fn(X[1], data.H, coefficient)[0]
    delta = r_a - r_b
    out = {"a": a, "b": b, "level": level, "coefficient": coefficient, "r_a": r_a, "r_b": r_b, "delta": delta,
           "delta_ci": [float("nan"), float("nan")], "p_bootstrap": float("nan"),
           "p_bootstrap_two_sided": float("nan"), "n_boot_valid": 0, "p_permutation": float("nan"),
           "n_perm_valid": 0, "williams": None,
           "signature": correlation_signature(coefficient, level, doc_key=opts["doc_key"],
                                              field=opts["field"] or "human", n_systems=len(data.systems),
                                              n_docs=len(data.docs), resample=resample, n_boot=n_boot,
                                              confidence=confidence, seed=seed, rouge=rouge_sig)}
    if n_boot > 0:
        if reps is None:
            prepared = resampling.Prepared(X, data.H, level)
            reps = resampling.replicates(prepared, coefficient, n_boot, resample, seed, workers)
        out.update(_bootstrap_test(reps[:, 0] - reps[:, 1], delta, confidence))
    if n_perm > 0 and math.isfinite(delta):
        out["p_permutation"], out["n_perm_valid"] = permutation_pvalue(X, data.H, level, coefficient, delta, n_perm,
                                                                       resample, seed)
    if coefficient == "pearson" and level in ("system", "global"):
        xa, xb, xh = _items(data, level)
        st = coefficients.scipy_stats()
        out["williams"] = williams(float(st.pearsonr(xa, xh)[0]), float(st.pearsonr(xb, xh)[0]),
                                   float(st.pearsonr(xa, xb)[0]), len(xh))
    return out


def _bootstrap_test(d: np.ndarray, delta: float, confidence: float) -> dict:
    d = d[np.isfinite(d)]
    if not len(d) or not math.isfinite(delta):
        return {}
    lo, hi, _ = resampling.interval(d, confidence)
    c = d - d.mean()
    tol = 1e-12
    return {"delta_ci": [lo, hi], "n_boot_valid": int(len(d)),
            "p_bootstrap": (1 + int((c >= delta - tol).sum())) / (1 + len(d)),
            "p_bootstrap_two_sided": (1 + int((np.abs(c) >= abs(delta) - tol).sum())) / (1 + len(d))}
