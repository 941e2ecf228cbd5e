"""Is system A better than system B on the same documents?  (issue #18)

``significance(base_run, new_run, systems)``: the first of ``systems`` is the baseline (read from
``base_run``), each other system (read from ``new_run``; the same run for the within-run case) is
tested against it on their **common documents**, for every rouge type in both runs and every
requested statistic (F by default; P and R on request).  Per comparison, over the n documents with
``d_i = system_i - baseline_i``:

* ``delta = mean(d)``;
* **paired bootstrap** (sacrebleu's ``--paired-bs``): replicate ``b`` weighs document ``i`` by the
  Poisson(1) weight ``w[b, i]`` of :func:`pipeline.stats.poisson.poisson_weights`, keyed by
  ``(seed, document key)`` (the same weights for every system of a document, so the resampling is
  paired, and identical whatever the order, partitioning or worker count);
  ``delta*_b = sum_i w[b,i] d_i / sum_i w[b,i]``; the CI is the ``(1-c)/2``, ``(1+c)/2`` quantiles
  of ``delta*`` (NumPy's default linear interpolation); each system's own mean gets its CI the same
  way; ``p_bootstrap = (1 + #{b : |delta*_b - mean(delta*)| >= |delta| - tol}) / (1 + n_boot)``
  (the null distribution is the bootstrap distribution shifted to mean 0);
* **approximate randomization** (paired permutation, sacrebleu's ``--paired-ar``): trial ``r``
  swaps the two systems' outputs of document ``i`` iff its sign ``s[r, i]`` is -1
  (:func:`pipeline.stats.poisson.sign_flips`, keyed by ``(seed, document key)``);
  ``p_ar = (1 + #{r : |mean(s[r] * d)| >= |delta| - tol}) / (1 + n_trials)``;
* ``tol = 1e-12 * max(1, max|d|)`` (a rounding guard: the identity swap must count);
* **Holm** step-down correction over the family of comparisons with one baseline, per (type,
  statistic, test): with the m p-values sorted ascending, ``p_holm(j) = max_{i<=j} min(1, (m-i+1) p(i))``.

**The document key.**  Examples of different systems align by document.  By default the document
of an example is its ``id`` (the ``lines`` layout and most paired layouts give the same id to the
same document in every system).  When ids carry the system (``newsroom:<doc>:<system>`` in
``shared/data``), ``doc_key`` is a regular expression whose first group is the document, with
``{system}`` standing for the escaped system name: ``(.*):{system}$``.  An id the expression does
not match, or two examples of one system with the same document, is an error naming them.
"""
from __future__ import annotations


import numpy as np

from pipeline.gate.compare import settings_check
from pipeline.gate.format import system_label
from pipeline.gate.runs import CompareError, RunData
from pipeline.scoring.types import STATS
from pipeline.stats.keys import DEFAULT_SEED, document_keys
from pipeline.stats.poisson import example_bases, replicate_means, sign_flips

_CHUNK = 2_000_000   # elements of a weight / sign matrix built at once


def doc_keys(ids: list[str], system: str, doc_key: str | None) -> list[str]:
    """The document of every id of ``system`` (see the module docstring; :func:`document_keys`)."""
    return document_keys(ids, system, doc_key, CompareError, system_label(system))


def _frame(run: RunData, system: str, cols: list[str], doc_key: str | None):
    g = run.scores[run.scores["system"] == system]
    if not len(g):
        have = sorted(run.scores["system"].unique()) if len(run.scores) else []
        raise CompareError(f"system {system_label(system)!r} is not in {run.url} "
                           f"(systems: {', '.join(map(system_label, have)) or 'none'})")
    docs = doc_keys(g["id"].tolist(), system, doc_key)
    g = g[["id", *[c for c in cols if c in g]]].copy()
    g["doc"] = docs
    dup = g["doc"][g["doc"].duplicated()]
    if len(dup):
        raise CompareError(f"system {system_label(system)!r} has several examples of document {dup.iloc[0]!r}: "
                           "give --doc-key so that each example maps to its own document")
    return g.set_index("doc")


def _weighted_means(bases: np.ndarray, X: np.ndarray, n_boot: int) -> np.ndarray:
    """``(n_boot, k)`` Poisson-bootstrap replicate means of the columns of ``X`` (n, k)."""
    return replicate_means(bases, X, n_boot, max(1, _CHUNK // max(n_boot, 1)))


def _ar_pvalue(bases: np.ndarray, d: np.ndarray, n_trials: int) -> float:
    n = len(d)
    obs = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    hits = 0
    step = max(1, _CHUNK // max(n, 1))
    for lo in range(0, n_trials, step):
        m = min(step, n_trials - lo)
        s = sign_flips(bases, m, start=lo)  # trials lo .. lo+m-1 of every document's sign stream
        hits += int((np.abs(s @ d / n) >= obs - tol).sum())
    return (1 + hits) / (1 + n_trials)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def significance(base_run: RunData, new_run: RunData, systems: list[str], stats=("fmeasure",),
                 doc_key: str | None = None, n_boot: int = 1000, n_trials: int = 10000, seed: int = DEFAULT_SEED,
                 confidence: float = 0.95, min_coverage: float = 1.0,
                 allow_different_settings: bool = False) -> dict:
    """The comparisons as a JSON-able dict (see the module docstring).  Not comparable (as run
    vs run ``compare``): two runs made with other settings (unless ``allow_different_settings``),
    a system whose documents with finite scores in both cover less than ``min_coverage`` of the
    baseline's, or none."""
    systems = [s for s in systems]
    _check_request(systems, stats, n_boot, n_trials)
    baseline, others = systems[0], systems[1:]
    types = [t for t in base_run.rouge_types if t in new_run.rouge_types]
    if not types:
        raise CompareError("no rouge type in common")
    if not 0 <= min_coverage <= 1:
        raise CompareError("min_coverage must be in [0, 1]")
    cols = [f"{t}_{s}" for t in types for s in stats]
    fb = _frame(base_run, baseline, cols, doc_key)
    frames = {s: _frame(new_run, s, cols, doc_key) for s in others}
    q = (1 - confidence) / 2
    rows, blockers = [], []
    notes = settings_check(base_run.signature, new_run.signature, allow_different_settings, blockers)
    for s in others:
        docs, B, S, blocker = _paired_docs(fb, frames[s], baseline, s, doc_key, min_coverage, cols)
        if blocker:
            blockers.append(blocker)
            continue
        for c_i, c in enumerate(cols):
            t, st = c.rsplit("_", 1)
            rows.append({"type": t, "stat": st, "baseline": baseline, "system": s,
                         **_paired_tests(docs, B[:, c_i], S[:, c_i], n_boot, n_trials, seed, q)})
    _holm_families(rows, types, stats, 1 - confidence)
    return {"base": base_run.url, "new": new_run.url, "baseline": baseline, "systems": others,
            "rouge_types": types, "stats": list(stats), "doc_key": doc_key or "id",
            "settings": {"n_boot": n_boot, "n_trials": n_trials, "seed": seed, "confidence": confidence,
                         "correction": "Holm, per type, statistic and test, over the systems compared "
                                       "with the baseline",
                         "bootstrap": "paired Poisson bootstrap, weights keyed by (seed, document)",
                         "randomization": "approximate randomization, signs keyed by (seed, document)"},
            "rows": rows, "comparable": not blockers, "not_comparable": blockers, "notes": notes}


def _check_request(systems: list[str], stats, n_boot: int, n_trials: int) -> None:
    if len(systems) < 2:
        raise CompareError("--systems needs the baseline and at least one system: BASELINE,A[,B...]")
    if len(set(systems)) != len(systems):
        raise CompareError(f"--systems lists a system twice: {systems}")
    bad = [s for s in stats if s not in STATS]
    if bad:
        raise CompareError(f"unknown statistic {bad}")
    if n_boot < 1 or n_trials < 1:
        raise CompareError("--n-boot and --n-perm must be >= 1 for --systems")


def _paired_docs(fb, fs, baseline: str, system: str, doc_key: str | None, min_coverage: float, cols: list[str]):
    """``(docs, B, S, blocker)``: the documents of both systems and their scores (documents x
    ``cols``), or the reason they cannot be compared (no common document, too little coverage)."""
    docs = sorted(set(fb.index) & set(fs.index))
    if not docs:
        hint = " (do the ids carry the system? try --doc-key '(.*):{system}$')" if not doc_key else ""
        return docs, None, None, f"{system_label(baseline)} and {system_label(system)} share no document{hint}"
    B = fb.loc[docs, cols].to_numpy(np.float64)
    S = fs.loc[docs, cols].to_numpy(np.float64)
    # coverage of the documents actually compared (finite in both), as run vs run compare
    n_ok = int((np.isfinite(B) & np.isfinite(S)).all(axis=1).sum())
    cov = n_ok / len(fb) if len(fb) else 1.0
    if n_ok == 0 or cov < min_coverage:
        return docs, B, S, (f"{system_label(system)}: coverage {cov:.1%} ({n_ok} of {len(fb)} documents of "
                            f"{system_label(baseline)} compared, with finite scores in both) is below "
                            f"--min-coverage {min_coverage:.0%}")
    return docs, B, S, None


def _paired_tests(docs: list[str], b_col: np.ndarray, s_col: np.ndarray, n_boot: int, n_trials: int, seed: int,
                  q: float) -> dict:
    """One statistic of one system against the baseline, on the documents finite in both: the
    means and the delta with their bootstrap CIs, and both p-values (uncorrected)."""
    ok = np.isfinite(b_col) & np.isfinite(s_col)
    keys = [d for d, k in zip(docs, ok) if k]
    b, x = b_col[ok], s_col[ok]
    d = x - b
    bases = example_bases(keys, seed)
    reps = _weighted_means(bases, np.stack([b, x, d], axis=1), n_boot)
    rd = reps[:, 2]
    delta = float(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    p_bs = (1 + int((np.abs(rd - rd.mean()) >= abs(delta) - tol).sum())) / (1 + n_boot)
    lo, hi = np.quantile(rd, [q, 1 - q])
    blo, bhi = np.quantile(reps[:, 0], [q, 1 - q])
    slo, shi = np.quantile(reps[:, 1], [q, 1 - q])
    return {"n_docs": len(keys), "baseline_mean": float(b.mean()), "baseline_ci": [float(blo), float(bhi)],
            "system_mean": float(x.mean()), "system_ci": [float(slo), float(shi)],
            "delta": delta, "delta_ci": [float(lo), float(hi)],
            "p_bootstrap": p_bs, "p_ar": _ar_pvalue(bases, d, n_trials)}


def _holm_families(rows: list[dict], types: list[str], stats, alpha: float) -> None:
    """Add the Holm-corrected p-values and ``significant`` (both tests below ``alpha``) to every row,
    per family: one rouge type, one statistic, one test, every system against the baseline."""
    for t in types:
        for st in stats:
            fam = [r for r in rows if r["type"] == t and r["stat"] == st]
            for name in ("p_bootstrap", "p_ar"):
                for r, p in zip(fam, holm([r[name] for r in fam])):
                    r[name + "_holm"] = p
            for r in fam:
                r["significant"] = bool(r["p_bootstrap_holm"] < alpha and r["p_ar_holm"] < alpha)


def format_significance(result: dict) -> str:
    """A table in the style of sacrebleu's paired output, one block per rouge type and statistic."""
    st = result["settings"]
    pct = int(round(st["confidence"] * 100))
    out = [f"Baseline: {system_label(result['baseline'])} ({result['base']})"
           + ("" if result["new"] == result["base"] else f"; systems from {result['new']}"),
           f"paired bootstrap {st['n_boot']}, approximate randomization {st['n_trials']}, seed {st['seed']}; "
           f"documents by {result['doc_key']}; p-values Holm-corrected over {len(result['systems'])} "
           f"system(s); * = significant at {1 - st['confidence']:.2f} by both tests"]
    for t in result["rouge_types"]:
        for s in result["stats"]:
            fam = [r for r in result["rows"] if r["type"] == t and r["stat"] == s]
            if not fam:
                continue
            name = f"{t} {s[0].upper()}"
            head = ["System", "n", f"{name} (mean, {pct}% CI)", f"delta ({pct}% CI)", "p bootstrap", "p AR"]
            b = fam[0]
            lines = [[f"Baseline: {system_label(b['baseline'])}", str(b["n_docs"]),
                      f"{b['baseline_mean']:.4f} [{b['baseline_ci'][0]:.4f}, {b['baseline_ci'][1]:.4f}]", "", "", ""]]
            for r in fam:
                star = "*" if r["significant"] else ""
                lines.append([system_label(r["system"]), str(r["n_docs"]),
                              f"{r['system_mean']:.4f} [{r['system_ci'][0]:.4f}, {r['system_ci'][1]:.4f}]",
                              f"{r['delta']:+.4f} [{r['delta_ci'][0]:+.4f}, {r['delta_ci'][1]:+.4f}]",
                              f"(p = {r['p_bootstrap_holm']:.4f}){star}", f"(p = {r['p_ar_holm']:.4f}){star}"])
            w = [max(len(head[i]), *(len(l[i]) for l in lines)) for i in range(len(head))]
            out += ["", "  ".join(h.ljust(x) for h, x in zip(head, w)), "  ".join("-" * x for x in w)]
            out += ["  ".join(c.ljust(x) for c, x in zip(l, w)) for l in lines]
    for b in result["not_comparable"]:
        out.append(f"not comparable: {b}")
    return "\n".join(out)
