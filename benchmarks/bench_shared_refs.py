"""References shared by many systems: each distinct reference text tokenized once per process.

    python benchmarks/bench_shared_refs.py --systems 16 --docs 1000 --rounds 5

A multi-system corpus: ``--docs`` short references (``corpus.py``), each scored against one
candidate per system (system 0's candidate is the corpus's, the others drop a seeded tenth of its
words), in ``--batch``-pair calls, in two orders:

* **by system** (a job's case): system 0's rows, then system 1's, ...: every call is one system,
  so a reference repeats only across calls (as a job's tasks, one per system's file, see it);
* **by document**: every system's row of a document next to each other: references repeat
  within a call.

Each order is scored with its references in two forms, one process:

* **shared**: every system's rows carry the same reference texts (equal strings, distinct
  objects, as rows read from JSONL or Parquet);
* **distinct**: system ``s``'s copy of a reference ends in ``s`` spaces, so no two texts are
  equal, while their tokens, and so every score, are the same (checked with ``==``);

and by two kinds of encoder (one for each order, path and form, each its own vocabulary, warmed
before timing): **cache**, the default
(:mod:`pipeline.text.textcache`: a reference text is kept at first sight while the kept texts
total at most ``TextCache.FIRST_SIGHT_BYTES``, else the second time, and not tokenized again after
that; a column of references held as consecutive entries, in order, is found again whole, as a run;
emptied at the start of every round, so each round's first system tokenizes its references,
and the second those past the first MiB), and **no cache**
(its bound set to 0: each call tokenizes the references it holds once, as before the cache).

Printed per order and path (``score_arrays`` on Python lists, ``score_arrow`` on Arrow columns as
the job scores a task's table): pairs/s in process CPU time, every configuration of a call timed
back to back (in an order that rotates), and the medians of the per-call ratios; then the share
of a call's time its references take: the examples' encoding minus the candidates' alone, over
the whole ``score_arrays`` call, for system 2's first call after systems 0 and 1 (by then every
reference text is kept); and the target's own measure: the references of all
the systems of a run (by system, a new cache) against one system's references tokenized.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("ROUGE_PIPELINE_COLD_START", "0")  # the compiled path from the first call

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
CONFIGS = [("distinct", "no cache"), ("distinct", "cache"), ("shared", "no cache"), ("shared", "cache")]


def multi_system_corpus(systems: int, docs: int, seed: int = 0):
    """(references shared, references made distinct, candidates): rows ordered document by
    document, every system's row of a document next to each other (row ``d * systems + s``)."""
    refs, cands = make_corpus("short", docs, seed)
    shared, distinct, out = [], [], []
    for d in range(docs):
        for s in range(systems):
            rng = random.Random(f"{seed}-{s}-{d}")
            cand = cands[d] if s == 0 else " ".join(w for w in cands[d].split(" ") if rng.random() > 0.1)
            shared.append(refs[d].encode().decode())    # an equal str, another object
            distinct.append(refs[d] + " " * s)
            out.append(cand)
    return shared, distinct, out


def _cpu(fn) -> float:
    """Process CPU time of one call (other processes on the core count less than in wall time)."""
    t0 = time.process_time()
    fn()
    return max(time.process_time() - t0, 1e-9)


def _best(fn, reps=7):
    return min(_cpu(fn) for _ in range(reps))


def _median_q(v):
    q = statistics.quantiles(v) if len(v) > 1 else v * 3
    return f"x{statistics.median(v):.2f} ({q[0]:.2f}..{q[2]:.2f})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=16, help="at least 3")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=1000, help="pairs per call")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-stem", dest="stem", action="store_false", default=True)
    ap.add_argument("--corpus-only", action="store_true", help="only the last table (the corpus's references)")
    args = ap.parse_args(argv)

    import numpy as np
    import pyarrow as pa

    import pipeline
    from pipeline.scoring import engine
    from pipeline.text.encoder import DefaultEncoder
    from pipeline.text.textcache import TextCache

    shared0, distinct0, cands0 = multi_system_corpus(args.systems, args.docs)
    n = len(cands0)
    by_system = [d * args.systems + s for s in range(args.systems) for d in range(args.docs)]
    orders = {"by system": by_system, "by document": list(range(n))}
    rows = {o: {"shared": [shared0[i] for i in idx], "distinct": [distinct0[i] for i in idx],
                "cands": [cands0[i] for i in idx]} for o, idx in orders.items()}
    scorer = pipeline.RougeScorer(TYPES, use_stemmer=args.stem)
    b = args.batch
    batches = [(a, min(n, a + b)) for a in range(0, n, b)]
    arrow = {(o, k): [(pa.array(r[k][a:z]), pa.array(r["cands"][a:z])) for a, z in batches]
             for o, r in rows.items() for k in ("shared", "distinct")}
    # one encoder per order, path and configuration: no call finds texts another one left
    encoders = {(o, p, cfg): DefaultEncoder(args.stem) for o in orders for p in ("lists", "arrow") for cfg in CONFIGS}
    for (_, _, (_, mode)), enc in encoders.items():
        if mode == "no cache":
            enc.cache = TextCache(max_bytes=0)

    def call(order, path, cfg, i):
        engine._ENCODERS[args.stem] = encoders[(order, path, cfg)]
        if path == "arrow":
            return scorer.score_arrow(*arrow[(order, cfg[0])][i])
        a, z = batches[i]
        return scorer.score_arrays(rows[order][cfg[0]][a:z], rows[order]["cands"][a:z])

    la = os.getloadavg()
    print(f"{args.systems} systems x {args.docs} documents = {n} short pairs, {b}-pair calls, "
          f"stemmed={args.stem}; load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    if args.corpus_only:
        corpus_references(args, rows["by system"], min(b, args.docs))
        return 0
    # exactness (and the encoders' vocabularies warmed): every configuration, path and order gives
    # the numbers of distinct references without the cache, on every pair
    want = None
    for order, idx in orders.items():
        back = np.argsort(idx)
        for path in ("lists", "arrow"):
            for cfg in CONFIGS:
                got = np.concatenate([call(order, path, cfg, i).scores for i in range(len(batches))])[back]
                want = got if want is None else want
                assert np.array_equal(got, want), (order, path, cfg)
    print(f"scores equal on all {n} pairs in every order, path, reference form and encoder: yes")

    took = {(o, p, c): [] for o in orders for p in ("lists", "arrow") for c in CONFIGS}
    for r in range(args.rounds):
        for enc in encoders.values():
            enc.cache.clear()  # a new run: the round's first system misses
        for order in orders:
            for i in range(len(batches)):
                for path in ("lists", "arrow"):
                    k = (r + i) % len(CONFIGS)
                    for cfg in CONFIGS[k:] + CONFIGS[:k]:
                        took[(order, path, cfg)].append(_cpu(lambda: call(order, path, cfg, i)))
    print(f"\n== pairs/s, one core, process CPU time ({args.rounds} rounds); shared / distinct: the median "
          "of the per-call ratios (quartiles) ==")
    print(f"{'order, path':<20}" + "".join(f"{k + ', ' + m:>20}" for k, m in CONFIGS)
          + f"{'shared, cache / distinct':>27}{'shared, no cache / distinct':>30}{'distinct: cache / no cache':>29}")
    for (order, path) in [(o, p) for o in orders for p in ("lists", "arrow")]:
        t = {cfg: took[(order, path, cfg)] for cfg in CONFIGS}
        rate = "".join(f"{n * args.rounds / sum(t[cfg]):>20,.0f}" for cfg in CONFIGS)
        base = t[("distinct", "no cache")]
        after = [x / y for x, y in zip(base, t[("shared", "cache")])]
        before = [x / y for x, y in zip(base, t[("shared", "no cache")])]
        cost = [x / y for x, y in zip(base, t[("distinct", "cache")])]
        print(f"{order + ', ' + path:<20}{rate}{_median_q(after):>27}{_median_q(before):>30}{_median_q(cost):>29}")

    # the references' share of one call: system 2's first call (by system), after systems 0 and 1
    # (by then every reference text is kept, at first or second sight)
    a, z = batches[0]
    k = min(z - a, args.docs)
    order = rows["by system"]
    print(f"\n== where system 2's first {k}-pair call goes (by system, best of 7, process CPU time), us/pair ==")
    for label, cfg in (("distinct", ("distinct", "no cache")), ("shared, no cache (before)", ("shared", "no cache")),
                       ("shared, cache (after)", ("shared", "cache"))):
        enc = encoders[("by system", "lists", cfg)]
        engine._ENCODERS[args.stem] = enc
        enc.cache.clear()
        for s in range(2):  # systems 0 and 1's first rows
            first = slice(s * args.docs, s * args.docs + k)
            scorer.score_arrays(order[cfg[0]][first], order["cands"][first])
        s2 = slice(2 * args.docs, 2 * args.docs + k)
        refs, cands = order[cfg[0]][s2], order["cands"][s2]
        ones = np.ones(k, dtype=np.int64)
        total = _best(lambda: scorer.score_arrays(refs, cands))
        cand_t = _best(lambda: enc.encode(cands))
        both = _best(lambda: enc.encode_examples(cands, refs, ones))
        ref_t = max(both - cand_t, 0.0)
        rest = total - both
        print(f"{label:<26} total {total / k * 1e6:6.2f} | references {ref_t / k * 1e6:6.2f} ({ref_t / total:.0%}) | "
              f"candidates {cand_t / k * 1e6:6.2f} ({cand_t / total:.0%}) | kernels and the rest "
              f"{rest / k * 1e6:6.2f} ({rest / total:.0%})")
    corpus_references(args, rows["by system"], k)
    return 0


def corpus_references(args, order, k: int) -> None:
    """The target's own measure: the references of all the systems (by system, each system's first
    ``k`` rows in one call, the cache emptied first, as a new run) against one system's references
    tokenized (the median system's, by an encoder that keeps nothing, which also gives the whole
    corpus without the cache).  A call's references: the call minus
    the same call on its candidates alone (no references), in process CPU time; each system's
    figure is the median over ``--rounds`` runs of the whole sequence."""
    import numpy as np
    import pyarrow as pa

    from pipeline.columns import utf8_buffers
    from pipeline.text.encoder import DefaultEncoder
    from pipeline.text.textcache import TextCache

    S = args.systems
    firsts = [slice(s * args.docs, s * args.docs + k) for s in range(S)]

    def calls(s, path):
        refs, cands = order["shared"][firsts[s]], order["cands"][firsts[s]]
        refs = [r.encode().decode() for r in refs]  # new objects every run, as rows read again
        if path == "arrow":  # the candidates alone: the same scan of their UTF-8 buffers
            c, r = pa.array(cands), pa.array([[x] for x in refs])
            return (lambda e: e.encode_arrow(c, r)), (lambda e: e._finish(*e._encode_units(*utf8_buffers(c))))
        ones = np.ones(k, dtype=np.int64)
        return (lambda e: e.encode_examples(cands, refs, ones)), (lambda e: e.encode(cands))

    print(f"\n== the corpus's references, by system ({S} systems x {k} rows, one {k}-pair call a system, "
          f"median of {args.rounds} runs), us/pair ==")
    print(f"{'path':<8}{'one system (no cache)':>24}{'system 0':>10}{'system 1':>10}{'systems 2..':>13}"
          f"{'all ' + str(S) + ' systems':>16}{'/ one system':>14}{'without the cache':>19}")
    for path in ("lists", "arrow"):
        enc, plain = DefaultEncoder(args.stem), DefaultEncoder(args.stem)
        plain.cache = TextCache(max_bytes=0)
        for e in (enc, plain):  # vocabularies warmed: every token has its id and stem
            for s in range(S):
                calls(s, path)[0](e)
        per = [[] for _ in range(S)]
        per_plain = [[] for _ in range(S)]
        for _ in range(args.rounds):
            enc.cache.clear()
            for s in range(S):
                both, alone = calls(s, path)
                # one call each, as a run makes them (a repeated call would find the cache filled)
                per[s].append(-_cpu(lambda: alone(enc)) + _cpu(lambda: both(enc)))
                per_plain[s].append(-_cpu(lambda: alone(plain)) + _cpu(lambda: both(plain)))
        us = [statistics.median(v) / k * 1e6 for v in per]
        plain_us = [statistics.median(v) / k * 1e6 for v in per_plain]
        one_us = statistics.median(plain_us)
        print(f"{path:<8}{one_us:>24.2f}{us[0]:>10.2f}{us[1]:>10.2f}{statistics.median(us[2:]):>13.2f}"
              f"{sum(us):>16.2f}{'x%.2f' % (sum(us) / one_us):>14}{'x%.2f' % (sum(plain_us) / one_us):>19}")


if __name__ == "__main__":
    sys.exit(main())
