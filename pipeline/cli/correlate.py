"""``rouge-pipeline correlate RUN --human FILE --field NAME``: how well the run's ROUGE agrees with
human judgments (pipeline.meta; docs/meta-evaluation.md).  Exit 0 ok, 2 error (a bad option, a
judgments file that cannot be read or matches no example, a run that cannot be read, scipy
missing), 5 nothing to correlate (no group of at least 3 items at any level), 130 interrupted.

Start-up: argparse only here; pandas, NumPy and scipy are imported when the command runs.
"""
from __future__ import annotations

import argparse
import json
import math

from pipeline.errors import MetaError
from pipeline.stats.keys import DEFAULT_SEED


def add_parser(sub) -> None:
    c = sub.add_parser("correlate", help="correlate a run's ROUGE with human judgments (summary, system, global level)",
                       description="correlate RUN --human FILE --field NAME: one row per rouge type x P/R/F x level "
                                   "x coefficient, each with a bootstrap confidence interval and its signature; what the numbers "
                                   "mean: docs/meta-evaluation.md")
    c.add_argument("run", metavar="RUN", help="a finished run folder (its per-example scores)")
    c.add_argument("--human", required=True, metavar="FILE",
                   help="human judgments by (system, id): JSONL (the judged JSONL itself too), CSV or Parquet")
    c.add_argument("--field", required=True, metavar="NAME",
                   help="the judgment: a column, or a dotted path into nested records (human.relevance); "
                        "a list's numbers are annotations, averaged")
    c.add_argument("--level", default="summary,system,global",
                   help="levels, comma-separated: summary, system, global (default: all three)")
    c.add_argument("--coefficient", default="pearson,spearman,kendall",
                   help="coefficients, comma-separated: pearson, spearman, kendall (tau-b), kendall_c (tau-c) "
                        "(default: pearson,spearman,kendall)")
    c.add_argument("--doc-key", metavar="REGEX", help="the document of an id, the regex's first group "
                   "({system}: the system's name), as in compare (default: the id)")
    c.add_argument("--types", help="rouge types to correlate, comma-separated (default: every type in the run)")
    c.add_argument("--stats", help="statistics, comma-separated: precision, recall, fmeasure (default: all)")
    c.add_argument("--resample", default="both", choices=("both", "systems", "documents"),
                   help="what the bootstrap resamples (default: both; Deutsch et al. 2021)")
    c.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (default 1000; 0: no intervals)")
    c.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    c.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED}, as the "
                   "run statistics')")
    c.add_argument("--workers", type=int, default=1, help="threads computing the replicates (same numbers; default 1)")
    c.add_argument("--human-system", default="system", metavar="FIELD",
                   help="the judgments' system field (default: system)")
    c.add_argument("--human-id", default="id", metavar="FIELD", help="the judgments' id field (default: id)")
    c.add_argument("--compare", metavar="A,B", help="also test whether column A correlates better than B "
                   "(e.g. rouge2_recall,rougeL_fmeasure) at each level and coefficient asked")
    c.add_argument("--json", action="store_true", help="print the result as JSON (rows pandas reads: "
                   "pd.DataFrame(json.load(f)['rows']))")
    c.add_argument("--html", metavar="FILE", help="also write the table as a single-file HTML page")


def _split(value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run(args) -> int:
    from pipeline import meta  # pandas, NumPy, scipy: only when the command runs

    opts = dict(field=args.field, doc_key=args.doc_key, resample=args.resample, n_boot=args.n_boot,
                confidence=args.confidence, seed=args.seed, workers=args.workers,
                human_system=args.human_system, human_id=args.human_id)
    result = meta.correlate(args.run, args.human, levels=args.level, coefficients=args.coefficient,
                            types=_split(args.types), stats=_split(args.stats), **opts)
    tests = []
    if args.compare:
        pair = _split(args.compare)
        if len(pair) != 2:
            raise MetaError(f"--compare {args.compare!r}: two columns, A,B")
        tests = [_compare(meta, result, args, opts, pair, lv, co)
                 for lv in result.settings["levels"] for co in result.settings["coefficients"]]
    doc = result.to_dict()
    if tests:
        doc["compare"] = tests
    if args.html:
        from pipeline.meta.report import write_html  # the HTML page only when asked for

        write_html(args.html, _clean(doc))
    print(json.dumps(_clean(doc), indent=2, allow_nan=False) if args.json else format_result(doc))
    return 0


def _compare(meta, result, args, opts, pair, level, coef) -> dict:
    """One --compare test: on the correlation's data and replicates when it holds both columns
    (nothing read or drawn again), else read with only these two columns (--types/--stats left them out)."""
    if all(c in result.columns for c in pair):
        return meta.compare_metrics_from_result(result, pair[0], pair[1], level, coef, workers=args.workers)
    return meta.compare_metrics(args.run, args.human, pair[0], pair[1], level=level, coefficient=coef, **opts)


def _clean(v):
    """NaN (an undefined correlation) as JSON null, everywhere in the document."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _f(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def joined(settings: dict) -> list[str]:
    """What the join of scores and judgments kept and left out, and the judgments averaged."""
    s = settings
    line = f"examples: {s['examples']} joined with a judgment"
    if s.get("scored_unjudged") or s.get("human_unmatched"):
        line += (f"; {s.get('scored_unjudged', 0)} scored example(s) without a judgment; "
                 f"{s.get('human_unmatched', 0)} judgment(s) without a scored example")
    out = [line]
    if s.get("human_averaged"):
        out.append(f"averaged: {s['human_averaged']} (system, id) judged in several rows "
                   f"({s['human_averaged_rows']} rows), each key's annotations averaged")
    return out


def _block(rows: list[dict], n_boot: int) -> list[str]:
    """One (level, coefficient) block: its rows, a mark on partial intervals, the reasons for no value."""
    head = rows[0]
    lines = ["", f"{head['level']} level, {head['coefficient']}   [{head['signature'].split(' + ')[0]}]"]
    notes = list(dict.fromkeys(r["note"] for r in rows if r.get("note")))
    if all(r.get("too_few") for r in rows):   # no number to show: the reason only
        return lines + [f"  no value: {n}" for n in notes]
    lines.append(f"  {'type':<10} {'stat':<10} {'r':>8} {'ci':>20}  used  skipped")
    for r in rows:
        mark = "*" if r.get("ci_partial") else " "
        ci = f"[{_f(r['ci_low'])}, {_f(r['ci_high'])}]{mark}"
        lines.append(f"  {r['type']:<10} {r['stat']:<10} {_f(r['r']):>8} {ci:>20}  {r['n_used']:>4}  {r['n_skipped']:>7}")
    partial = [r for r in rows if r.get("ci_partial")]
    if partial:
        low = min(r["n_boot_valid"] for r in partial)
        lines.append(f"  * interval from fewer valid replicates than --n-boot {n_boot} (as few as {low}): "
                     "resamples where the correlation was undefined left out")
    few = max(r.get("n_too_few") or 0 for r in rows) if head["level"] == "summary" else 0
    if few:
        lines.append(f"  skipped: up to {few} of {head['n_docs']} documents have fewer than 3 systems with both "
                     "scores (the other skipped: constant scores)")
    return lines + [f"  -: {n}" for n in notes]


def format_result(doc: dict) -> str:
    """The join's counts, then the rows grouped by (level, coefficient), each group under its signature."""
    lines = joined(doc["settings"])
    groups: dict[tuple, list] = {}
    for r in doc["rows"]:
        groups.setdefault((r["level"], r["coefficient"]), []).append(r)
    for rows in groups.values():
        lines += _block(rows, doc["settings"].get("n_boot", 0))
    lines += [""] if doc.get("compare") else []
    for t in doc.get("compare", []):
        w = t["williams"]
        lines.append(f"{t['a']} vs {t['b']} ({t['level']}, {t['coefficient']}): delta {_f(t['delta'])} "
                     f"[{_f(t['delta_ci'][0])}, {_f(t['delta_ci'][1])}], p(A better) bootstrap {_f(t['p_bootstrap'])}, "
                     f"permutation {_f(t['p_permutation'])}"
                     + (f", Williams {_f(w['p'])}" if w else ""))
    lines += ["", f"signature: {doc['signature']}"]
    return "\n".join(lines).lstrip("\n")
