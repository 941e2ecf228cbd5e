"""Pairs/s of the ``unicode`` profile against the default (rouge-score) profile, per language.

    python benchmarks/bench_unicode.py [--rounds 5] [--repeat 4]

Data: ``../shared/data/multi_summeval`` (270 pairs per language; internal test data, not
shipped).  Each language's pairs are repeated ``--repeat`` times (so ~1080 pairs per batch).
Every scorer scores the same pairs with rouge1, rouge2, rougeL, rougeLsum in one
``score_arrays`` call; rounds alternate between scorers and the best round is reported.
Scorers are built once and warmed up (kernels compiled, stem caches filled), as in a
long-running worker.  Nothing here is a test: it prints numbers only.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pipeline import RougeScorer
from pipeline.text.snowball import SNOWBALL_LANGUAGES
from pipeline.text.unicode import UnicodeTokenizer

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "multi_summeval" / "multi_summeval.jsonl"
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    by_lang: dict[str, list[dict]] = {}
    with DATA.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_lang.setdefault(r["language"], []).append(r)
    print(f"{'lang':5} {'pairs':>6} {'default':>10} {'unicode':>10} {'uni+stem':>10} {'ratio':>6}  "
          f"{'tokens/text (default, unicode)':>30}")
    for lang, recs in by_lang.items():
        refs = [r["references"][0] for r in recs] * args.repeat
        cands = [r["candidate"] for r in recs] * args.repeat
        scorers = {"default": RougeScorer(TYPES), "unicode": RougeScorer(TYPES, tokenizer=UnicodeTokenizer(lang))}
        if lang in SNOWBALL_LANGUAGES:
            scorers["uni+stem"] = RougeScorer(TYPES, tokenizer=UnicodeTokenizer(lang, stem=True))
        best = {k: float("inf") for k in scorers}
        for s in scorers.values():
            s.score_arrays(refs[:50], cands[:50])
        for _ in range(args.rounds):
            for k, s in scorers.items():
                t0 = time.perf_counter()
                s.score_arrays(refs, cands)
                best[k] = min(best[k], time.perf_counter() - t0)
        rate = {k: len(refs) / v for k, v in best.items()}
        n_def = sum(len(scorers["default"].encode([t]).tokens) for t in refs[:270]) / 270
        n_uni = sum(len(scorers["unicode"]._tokenizer.tokenize(t)) for t in refs[:270]) / 270
        stem = f"{rate['uni+stem']:10.0f}" if "uni+stem" in rate else f"{'-':>10}"
        print(f"{lang:5} {len(refs):6d} {rate['default']:10.0f} {rate['unicode']:10.0f} {stem} "
              f"{rate['unicode'] / rate['default']:6.2f}  {n_def:14.1f} {n_uni:14.1f}")


if __name__ == "__main__":
    main()
