"""References shared by many systems: each distinct reference text tokenized once.

    python benchmarks/bench_shared_refs.py --systems 16 --docs 1000 --rounds 5

A multi-system corpus: ``--docs`` short references (``corpus.py``), each scored against one
candidate per system (system 0's candidate is the corpus's, the others drop a seeded tenth of its
words).  The same pairs are scored two ways, back to back on every batch, one process:

* **shared**: every system's rows carry the same reference texts (equal strings, distinct
  objects, as rows read from JSONL or Parquet); each is tokenized once per batch;
* **distinct**: system ``s``'s copy of a reference ends in ``s`` spaces, so no two texts are
  equal, while their tokens, and so every score, are the same (checked with ``==``).

Printed per path (``score_arrays`` on Python lists, ``score_arrow`` on Arrow columns as the job
scores a task's table): pairs/s in process CPU time, shared / distinct (both timed back to back
on every batch, the median of the per-batch ratios), and the share of a batch's time its
references take: encoding them (tokenize, stem, ids; for shared, the distinct texts plus the
gather) over the whole ``score_arrays`` call.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def multi_system_corpus(systems: int, docs: int, seed: int = 0):
    """(references shared, references made distinct, candidates): rows ordered document by
    document, every system's row of a document next to each other."""
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


def _best(fn, reps=3):
    return min(_cpu(fn) for _ in range(reps))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=16)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=1000, help="pairs per call")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-stem", dest="stem", action="store_false", default=True)
    args = ap.parse_args(argv)

    import numpy as np
    import pyarrow as pa

    import pipeline
    from pipeline.scoring.batch import example_offsets, flatten_examples, shared_references
    from pipeline.text.encoder import gather

    shared, distinct, cands = multi_system_corpus(args.systems, args.docs)
    n = len(cands)
    scorer = pipeline.RougeScorer(TYPES, use_stemmer=args.stem)
    b = args.batch
    batches = [(a, min(n, a + b)) for a in range(0, n, b)]
    arrow = {k: [(pa.array(v[a:z]), pa.array(cands[a:z])) for a, z in batches]
             for k, v in (("shared", shared), ("distinct", distinct))}
    la = os.getloadavg()
    print(f"{args.systems} systems x {args.docs} documents = {n} short pairs, {b}-pair batches, "
          f"stemmed={args.stem}; load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")

    def run_lists(refs):
        return [scorer.score_arrays(refs[a:z], cands[a:z]) for a, z in batches]

    def run_arrow(kind):
        return [scorer.score_arrow(r, c) for r, c in arrow[kind]]

    # exactness: both layouts give the same numbers on every pair, on both paths
    ref = np.concatenate([r.scores for r in run_lists(distinct)])
    for got in (run_lists(shared), run_arrow("shared"), run_arrow("distinct")):
        assert np.array_equal(np.concatenate([r.scores for r in got]), ref)
    print(f"scores of shared == distinct on all {n} pairs (lists and Arrow): yes")

    # per batch, shared and distinct back to back (which first alternates), so both see the same
    # load; ratios are per batch, then the median: steadier than whole passes on a shared machine
    rates = {k: [] for k in ("lists shared", "lists distinct", "arrow shared", "arrow distinct")}
    ratio = {"lists": [], "arrow": []}
    for r in range(args.rounds):
        for i, (a, z) in enumerate(batches):
            for path in ("lists", "arrow"):
                took = {}
                for kind in (("shared", "distinct") if (r + i) % 2 == 0 else ("distinct", "shared")):
                    if path == "lists":
                        refs = (shared if kind == "shared" else distinct)[a:z]
                        took[kind] = _cpu(lambda: scorer.score_arrays(refs, cands[a:z]))
                    else:
                        took[kind] = _cpu(lambda: scorer.score_arrow(*arrow[kind][i]))
                    rates[f"{path} {kind}"].append((z - a) / took[kind])
                ratio[path].append(took["distinct"] / took["shared"])
    print("\n== pairs/s, one core, process CPU time (median over batches and rounds) ==")
    for k, v in rates.items():
        print(f"{k:<16}{statistics.median(v):>12,.0f}")
    for path, v in ratio.items():
        q = statistics.quantiles(v) if len(v) > 1 else v * 3
        print(f"{path}: shared / distinct x{statistics.median(v):.2f} (median of {len(v)} per-batch ratios; "
              f"quartiles {q[0]:.2f}..{q[2]:.2f})")

    # the references' share of a batch: encoding them, over the whole score_arrays call
    a, z = batches[0]
    print(f"\n== where a {z - a}-pair batch's time goes (best of 7, process CPU time), us/pair ==")
    for kind, refs in (("distinct", distinct[a:z]), ("shared", shared[a:z])):
        docs, n_refs = flatten_examples(refs, cands[a:z])
        ex_doc = example_offsets(n_refs)
        total = _best(lambda: scorer.score_arrays(refs, cands[a:z]), 7)
        cand_t = _best(lambda: scorer.encode(cands[a:z]), 7)
        if kind == "distinct":
            ref_t = _best(lambda: scorer.encode(refs), 7)
        else:
            def shared_refs():
                uniq, index = shared_references(docs, ex_doc)
                gather(scorer.encode(uniq[z - a:]), index[1::2] - (z - a))
            ref_t = _best(shared_refs, 7)
        rest = total - cand_t - ref_t
        k = z - a
        print(f"{kind:<9} total {total / k * 1e6:6.2f} | references {ref_t / k * 1e6:6.2f} ({ref_t / total:.0%}) | "
              f"candidates {cand_t / k * 1e6:6.2f} ({cand_t / total:.0%}) | kernels and the rest "
              f"{rest / k * 1e6:6.2f} ({rest / total:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
