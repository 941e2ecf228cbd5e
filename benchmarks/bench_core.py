"""Core throughput benchmark: ours vs rouge-score-rs vs rouge-score, one core, same corpus.

    python benchmarks/bench_core.py --kind short --pairs 20000 --rounds 3
    python benchmarks/bench_core.py --kind long --pairs 100 --rounds 3

All three libraries run in this one process, pinned to one CPU, with their thread
pools set to one thread, in alternating rounds (ours, rs, rouge-score, ours, ...).
rouge-score is slow (about 450 short pairs/s, about 1 long pair/s), so it scores
only the first ``--rs-sample`` pairs each round and its pairs/s is scaled from that.

Printed per library: pairs/s (median over rounds; wall time and, less sensitive
to other processes sharing the core, process CPU time) and the ratios, taken per
round and then the median.  Then the exactness check: every pair's P/R/F of every
type, ours == rouge-score-rs (all pairs) and ours == rouge-score (its sample),
compared with ``==`` on float64.  Finally the targets with PASS/MISS, and a
phase split of our time (encode / kernel / building the Score dicts).
"""
from __future__ import annotations

import os
import tempfile

# Thread pools must be sized before numba / rayon / BLAS are imported.
for _var in ("NUMBA_NUM_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
# Targets (per core, stemmed): pairs/s from issue 2, ratios from issue 30.
TARGETS = {
    "short": {"pairs_per_s": 150_000, "vs_rs": 5.0},
    "long": {"pairs_per_s": 1_000, "vs_rs": 12.0},
}


def _batches(n: int, size: int):
    for i in range(0, n, size):
        yield i, min(n, i + size)


def forget_references():
    """Empty our encoders' caches of reference texts (pipeline.text.textcache): every round reads
    the same corpus, and a reference seen in an earlier round would not be tokenized again; each
    round measures one pass over new references, as rouge-score-rs's rounds do."""
    from pipeline.scoring import engine

    for enc in engine._ENCODERS.values():
        if getattr(enc, "cache", None) is not None:
            enc.cache.clear()


def run_ours(scorer, refs, cands, batch):
    forget_references()
    out = []
    for a, b in _batches(len(refs), batch):
        out.extend(scorer.score_batch(refs[a:b], cands[a:b]))
    return out


def run_rs(scorer, refs, cands, batch):
    out = []
    for a, b in _batches(len(refs), batch):
        out.extend(scorer.score_batch(refs[a:b], cands[a:b]))
    return out


def run_rouge_score(scorer, refs, cands, _batch):
    return [scorer.score(r, c) for r, c in zip(refs, cands)]


def _timed(fn, *args):
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    res = fn(*args)
    w1, c1 = time.perf_counter(), time.process_time()
    return res, w1 - w0, c1 - c0


def _compare(a_list, b_list, offset=0):
    """Pairs whose P/R/F differ (exact float equality), with the first difference."""
    bad = []
    for i, (a, b) in enumerate(zip(a_list, b_list)):
        for t in TYPES:
            sa, sb = a[t], b[t]
            va = (float(sa.precision), float(sa.recall), float(sa.fmeasure))
            vb = (float(sb.precision), float(sb.recall), float(sb.fmeasure))
            if va != vb:
                bad.append((offset + i, t, va, vb))
                break
    return bad


def _cpu_busy(interval: float = 0.5):
    try:
        import psutil
        return psutil.cpu_percent(interval=interval, percpu=True)
    except Exception:
        return None


def _fmt(x: float) -> str:
    if x < 10:
        return f"{x:.2f}"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="ROUGE throughput: ours vs rouge-score-rs vs rouge-score (one core)")
    ap.add_argument("--kind", choices=("short", "long"), default="short")
    ap.add_argument("--pairs", type=int, default=None, help="default 20000 short / 100 long")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stem", dest="stem", action="store_true", default=True)
    ap.add_argument("--no-stem", dest="stem", action="store_false")
    ap.add_argument("--batch", type=int, default=None, help="pairs per score_batch call (default 5000 short / 100 long)")
    ap.add_argument("--rs-sample", type=int, default=None,
                    help="pairs rouge-score scores each round (default 500 short / 5 long)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the least busy one at start)")
    ap.add_argument("--warm-rounds", type=int, default=1,
                    help="full untimed passes of ours and rouge-score-rs before the rounds (0: none)")
    ap.add_argument("--skip-rouge-score", action="store_true")
    ap.add_argument("--interleave", type=int, default=0, metavar="BATCH",
                    help="also time ours and rouge-score-rs alternately on every BATCH-pair batch (3 passes) "
                         "and print the median per-batch ratio: steadier on a shared machine")
    ap.add_argument("--dump-failures", default=os.path.join(tempfile.gettempdir(), "bench_core_failures.jsonl"),
                    help="where the texts of differing pairs are written (only if any)")
    args = ap.parse_args(argv)
    n = args.pairs or (20_000 if args.kind == "short" else 100)
    batch = args.batch or (5_000 if args.kind == "short" else 100)
    sample = min(n, args.rs_sample or (500 if args.kind == "short" else 5))

    allowed = sorted(os.sched_getaffinity(0))
    busy = _cpu_busy()
    if args.cpu is not None:
        cpu = args.cpu
    elif busy:  # the CPU other processes use least right now
        cpu = min(allowed, key=lambda c: (busy[c] if c < len(busy) else 100.0, -c))
    else:
        cpu = allowed[-1]
    os.sched_setaffinity(0, {cpu})

    import numba
    import rouge_score
    import rouge_score_rs
    from rouge_score import rouge_scorer as rs_py

    import pipeline
    from pipeline.scoring.batch import example_offsets, score_encoded

    t0 = time.perf_counter()
    refs, cands = make_corpus(args.kind, n, args.seed)
    gen_s = time.perf_counter() - t0
    ours = pipeline.RougeScorer(TYPES, use_stemmer=args.stem)
    rs = rouge_score_rs.RougeScorer(TYPES, use_stemmer=args.stem)
    py = rs_py.RougeScorer(TYPES, use_stemmer=args.stem)

    print(f"corpus: {n} {args.kind} pairs (seed {args.seed}, generated in {gen_s:.1f} s), "
          f"{sum(map(len, refs)) + sum(map(len, cands))} chars; stemmed={args.stem}; types={'+'.join(TYPES)}")
    print(f"pinned to CPU {cpu} of {os.cpu_count()}; NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS} "
          f"RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}; batch={batch}; rouge-score sample={sample}")
    print(f"versions: pipeline {pipeline.__version__}, rouge-score-rs {rouge_score_rs.__version__}, "
          f"rouge-score {getattr(rouge_score, '__version__', '0.1.2')}, numba {numba.__version__}, "
          f"python {sys.version.split()[0]}")
    la = os.getloadavg()
    print(f"load average {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}; per-CPU busy % before start: {busy} "
          "(other processes share the cores: absolute numbers are noisy; per-round ratios are more reliable)")

    # Warm-up: the first call loads (or compiles) our numba kernels.
    w0 = time.perf_counter()
    ours.score_batch(refs[:50], cands[:50])
    print(f"warm-up (kernel load/compile + 50 pairs): ours {time.perf_counter() - w0:.2f} s")
    rs.score_batch(refs[:50], cands[:50])

    if args.warm_rounds:
        # Untimed-in-the-median full pass: fills our stem cache / vocabulary (and any
        # cache rouge-score-rs keeps), so the rounds measure the steady state.
        for _ in range(args.warm_rounds):
            _, w_ours, _ = _timed(run_ours, ours, refs, cands, batch)
            _, w_rs, _ = _timed(run_rs, rs, refs, cands, batch)
            print(f"warm-up round (not counted): ours {_fmt(n / w_ours)}/s (cold stem cache); "
                  f"rouge-score-rs {_fmt(n / w_rs)}/s")

    libs = [("ours", run_ours, ours, refs, cands),
            ("rouge-score-rs", run_rs, rs, refs, cands)]
    if not args.skip_rouge_score:
        libs.append(("rouge-score", run_rouge_score, py, refs[:sample], cands[:sample]))
    rate = {name: [] for name, *_ in libs}
    cpu_rate = {name: [] for name, *_ in libs}
    results = {}
    for r in range(args.rounds):
        line = []
        for name, fn, scorer, rr, cc in libs:
            res, wall, cput = _timed(fn, scorer, rr, cc, batch)
            if r == 0:
                results[name] = res
            rate[name].append(len(rr) / wall)
            cpu_rate[name].append(len(rr) / max(cput, 1e-9))
            line.append(f"{name} {_fmt(len(rr) / wall)}/s (cpu {_fmt(len(rr) / max(cput, 1e-9))}/s)")
        print(f"round {r + 1}: " + "; ".join(line))

    print("\n== throughput, pairs/s per core (median over rounds) ==")
    print(f"{'library':<16}{'wall pairs/s':>14}{'cpu pairs/s':>14}{'min..max wall':>22}")
    for name in rate:
        w = rate[name]
        print(f"{name:<16}{_fmt(statistics.median(w)):>14}{_fmt(statistics.median(cpu_rate[name])):>14}"
              f"{_fmt(min(w)) + '..' + _fmt(max(w)):>22}")
    ratios = {}
    for other in [x for x in rate if x != "ours"]:
        per_round = [a / b for a, b in zip(rate["ours"], rate[other])]
        per_round_cpu = [a / b for a, b in zip(cpu_rate["ours"], cpu_rate[other])]
        ratios[other] = statistics.median(per_round)
        print(f"ours / {other}: x{statistics.median(per_round):,.2f} (per round: "
              f"{', '.join(f'{x:,.2f}' for x in per_round)}; by cpu time x{statistics.median(per_round_cpu):,.2f})")

    if args.interleave:
        per_batch, b_ours, b_rs = [], [], []
        for _ in range(3):
            forget_references()
            for a, b in _batches(n, args.interleave):
                t0 = time.perf_counter()
                ours.score_batch(refs[a:b], cands[a:b])
                t1 = time.perf_counter()
                rs.score_batch(refs[a:b], cands[a:b])
                t2 = time.perf_counter()
                per_batch.append((t2 - t1) / (t1 - t0))
                b_ours.append((b - a) / (t1 - t0))
                b_rs.append((b - a) / (t2 - t1))
        q = statistics.quantiles(per_batch)
        ratios["interleaved"] = statistics.median(per_batch)
        print(f"interleaved per {args.interleave}-pair batch ({len(per_batch)} batches): ours / rouge-score-rs "
              f"x{ratios['interleaved']:.2f} (quartiles {q[0]:.2f}..{q[2]:.2f}); median ours "
              f"{_fmt(statistics.median(b_ours))}/s, rouge-score-rs {_fmt(statistics.median(b_rs))}/s")

    print("\n== exactness (P, R, F of all 4 types, float64 ==) ==")
    failures = []
    bad = _compare(results["ours"], results["rouge-score-rs"])
    print(f"ours vs rouge-score-rs: {len(bad)} differing pairs of {n}")
    failures += [("rouge-score-rs",) + b for b in bad]
    if "rouge-score" in results:
        bad_py = _compare(results["ours"][:sample], results["rouge-score"])
        print(f"ours vs rouge-score:    {len(bad_py)} differing pairs of {sample}")
        failures += [("rouge-score",) + b for b in bad_py]
        bad_rs_py = _compare(results["rouge-score-rs"][:sample], results["rouge-score"])
        print(f"(rouge-score-rs vs rouge-score: {len(bad_rs_py)} differing pairs of {sample})")
    if failures:
        import json
        for lib, i, t, va, vb in failures[:5]:
            print(f"  pair {i} {t}: ours {va} vs {lib} {vb}")
        with open(args.dump_failures, "w", encoding="utf-8") as f:
            for lib, i, t, va, vb in failures:
                f.write(json.dumps({"pair": i, "type": t, "ours": va, lib: vb, "reference": refs[i],
                                    "candidate": cands[i]}, ensure_ascii=False) + "\n")
        print(f"  texts of the differing pairs written to {args.dump_failures}")

    tgt = TARGETS[args.kind]
    ours_rate = statistics.median(rate["ours"])
    print(f"\n== targets ({args.kind}, per core{'' if args.stem else '; targets are set for stemmed, this run is unstemmed'}) ==")
    print(f"ours >= {tgt['pairs_per_s']:,} pairs/s: {'PASS' if ours_rate >= tgt['pairs_per_s'] else 'MISS'} "
          f"({_fmt(ours_rate)})")
    print(f"ours >= {tgt['vs_rs']:g}x rouge-score-rs: {'PASS' if ratios['rouge-score-rs'] >= tgt['vs_rs'] else 'MISS'} "
          f"(x{ratios['rouge-score-rs']:.2f})")
    if "interleaved" in ratios:
        print(f"ours >= {tgt['vs_rs']:g}x rouge-score-rs, interleaved batches: "
              f"{'PASS' if ratios['interleaved'] >= tgt['vs_rs'] else 'MISS'} (x{ratios['interleaved']:.2f})")
    print(f"exact vs rouge-score-rs on every pair: {'PASS' if not bad else 'MISS'}")
    other = "long" if args.kind == "short" else "short"
    print(f"(the {other} targets: >= {TARGETS[other]['pairs_per_s']:,} pairs/s and >= "
          f"{TARGETS[other]['vs_rs']:g}x rouge-score-rs: run --kind {other})")

    # Phase split of our time: encode (tokenize + stem map) vs kernel vs Python dicts.
    types = ours.types
    enc_t = ker_t = dict_t = 0.0
    for a, b in _batches(n, batch):
        docs = [x for pair in zip(cands[a:b], refs[a:b]) for x in pair]
        offs = example_offsets([1] * (b - a))
        t0 = time.perf_counter()
        enc = ours.encode(docs)
        t1 = time.perf_counter()
        res = score_encoded(enc, offs, types)
        t2 = time.perf_counter()
        ours.to_dicts(res)
        t3 = time.perf_counter()
        enc_t += t1 - t0
        ker_t += t2 - t1
        dict_t += t3 - t2
    tot = enc_t + ker_t + dict_t
    print("\n== our time split (one extra pass, warm caches), us/pair ==")
    print(f"encode {enc_t / n * 1e6:.2f} ({enc_t / tot:.0%}) | kernel score_encoded {ker_t / n * 1e6:.2f} "
          f"({ker_t / tot:.0%}) | result dicts {dict_t / n * 1e6:.2f} ({dict_t / tot:.0%}) | "
          f"total {tot / n * 1e6:.2f} us/pair = {n / tot:,.0f} pairs/s; "
          f"score_arrays alone (no dicts) = {n / (enc_t + ker_t):,.0f} pairs/s")
    # Kernel time per rouge type, one type per call, on the first batch.
    b = min(n, batch)
    enc = ours.encode([x for pair in zip(cands[:b], refs[:b]) for x in pair])
    offs = example_offsets([1] * b)
    per_type = []
    for t in types:
        t0 = time.perf_counter()
        score_encoded(enc, offs, [t])
        per_type.append(f"{t.name} {(time.perf_counter() - t0) / b * 1e6:.2f}")
    print(f"kernel per type alone (first {b} pairs), us/pair: " + " | ".join(per_type))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
