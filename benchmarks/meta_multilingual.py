"""Does tokenizing the language properly raise ROUGE's agreement with humans? (Multi-SummEval)

    python benchmarks/meta_multilingual.py [--boot 1000] [--seed 0] [--json]

Data: ``../shared/data/multi_summeval`` (8 languages x 135 documents x 2 systems, one
reference, z-scored focus and coverage judgments; internal test data, not shipped).
For each language, the Pearson r with each judgment of

* ``rouge155``: the ROUGE-1.5.5 profile as Multi-SummEval scored it (pyrouge's ``-m``; ASCII
  tokens: every non-ASCII byte separates, so accented letters split words and Cyrillic or Han
  text leaves almost nothing), each document on its own, one sentence a line;
* ``rouge155 ids`` (ru, zh only): the same on the authors' own work-around for those two
  languages (``5. transform_RU_and_ZH.ipynb``): every distinct space-separated word (ru) or
  character (zh, newlines and spaces removed, ``[UNK]`` dropped) of a document's three texts
  replaced by an ASCII id, which is what their published ru/zh ROUGE numbers were computed on;
* ``unicode``: the unicode profile with the language's tokenization and its Snowball stemmer
  where there is one (zh: one token per Han character, no stemmer); ``unicode, no stemmer``
  separates the tokenization's share from the stemmer's;

for ROUGE-1, ROUGE-2 and ROUGE-L F (summary-level LCS in both: ``rougeL`` of rouge155,
``rougeLsum`` of unicode), over the 270 summaries (both systems pooled, as the paper's
"BERT+PG"). Statistics: :func:`pipeline.correlate` at the global level (Pearson, every summary
one item), its percentile bootstrap over documents (``resample="documents"``: a document's two
summaries drawn together; ``--boot`` replicates, ``--seed``). Its draws depend on the seed and
the sorted documents only, so every column gets the same resamples and the difference
unicode - baseline gets a paired interval and compare_metrics' two-sided bootstrap p; Williams'
test (``pipeline.meta.compare_metrics.williams``, two-sided here; it assumes independent
summaries, which two summaries of one document are not) is printed beside it. Nothing here is a test: it prints a table.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from pipeline import RougeScorer, correlate
from pipeline.meta.compare_metrics import williams
from pipeline.meta.resample import interval
from pipeline.text.snowball import SNOWBALL_LANGUAGES

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "multi_summeval" / "multi_summeval.jsonl"
LANGUAGES = ["en", "de", "es", "fr", "id", "ru", "tr", "zh"]
JUDGMENTS = ["focus_z", "coverage_z"]
METRICS = [("R1-F", 0), ("R2-F", 1), ("RL-F", 2)]
R155_TYPES = ["rouge1", "rouge2", "rougeL"]
UNI_TYPES = ["rouge1", "rouge2", "rougeLsum"]
# both ROUGE-Ls are summary-level (ROUGE-1.5.5's ROUGE-L is rouge-score's rougeLsum)
COLUMN_TYPES = ["rouge1", "rouge2", "rougeLsum"]


def load(path: Path) -> dict[str, list[dict]]:
    by_lang: dict[str, list[dict]] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            by_lang.setdefault(r["language"], []).append(r)
    return by_lang


def id_texts(records: list[dict], language: str) -> tuple[list[str], list[str]]:
    """The authors' ru/zh work-around: a document's words (ru) or characters (zh) -> ``w<k>``."""
    docs: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        docs.setdefault(r["doc_id"], []).append(i)
    cands, refs = [""] * len(records), [""] * len(records)
    for rows in docs.values():
        gold = records[rows[0]]["references"][0]
        systems = [records[i]["candidate"] for i in rows]
        if language == "zh":
            gold_units = [list(gold.replace("\n", ""))]
            sys_units = [[list("".join(s.split("\n")).replace("[UNK]", "").replace(" ", ""))] for s in systems]
        else:
            gold_units = [[w.strip() for w in line.split(" ")] for line in gold.split("\n")]
            sys_units = [[[w.strip() for w in line.replace(" [UNK] ", "").split(" ")] for line in s.split("\n")]
                         for s in systems]
        ids: dict[str, str] = {}
        for lines in [gold_units] + sys_units:
            for line in lines:
                for unit in line:
                    ids.setdefault(unit, f"w{len(ids)}")
        as_text = lambda lines: "\n".join(" ".join(ids[u] for u in line) for line in lines)  # noqa: E731
        for i, units in zip(rows, sys_units):
            cands[i], refs[i] = as_text(units), as_text(gold_units)
    return cands, refs


def f_scores(scorer, candidates, references) -> np.ndarray:
    """(n, 3) F of the scorer's three types."""
    return np.asarray(scorer.score_arrays(references, candidates).scores)[:, :, 2]


def columns(records: list[dict], language: str) -> dict[str, np.ndarray]:
    cands = [r["candidate"] for r in records]
    refs = [r["references"][0] for r in records]
    r155 = RougeScorer(R155_TYPES, use_stemmer=True, profile="rouge155")
    stem = "snowball" if language in SNOWBALL_LANGUAGES else "none"
    uni = RougeScorer(UNI_TYPES, profile="unicode", language=language, stemming=stem)
    out = {"rouge155": f_scores(r155, cands, refs)}
    if language in ("ru", "zh"):
        out["rouge155 ids"] = f_scores(r155, *id_texts(records, language))
    if stem == "snowball":
        plain = RougeScorer(UNI_TYPES, profile="unicode", language=language)
        out["unicode, no stemmer"] = f_scores(plain, cands, refs)
    out["unicode"] = f_scores(uni, cands, refs)
    return out


def frame(records: list[dict], f: np.ndarray) -> pd.DataFrame:
    """The per-example scores as :func:`pipeline.correlate` reads them (the document is the id)."""
    out = pd.DataFrame({"system": [r["system"] for r in records], "id": [r["doc_id"] for r in records]})
    for j, t in enumerate(COLUMN_TYPES):
        out[f"{t}_fmeasure"] = f[:, j]
    return out


def language_rows(records: list[dict], language: str, boot: int, seed: int) -> list[dict]:
    cols = columns(records, language)
    base = "rouge155 ids" if "rouge155 ids" in cols else "rouge155"
    rows = []
    for judgment in JUDGMENTS:
        human = pd.DataFrame({"system": [r["system"] for r in records], "id": [r["doc_id"] for r in records],
                              judgment: [r["human"][judgment] for r in records]})
        # documents resampled (a document's two summaries together); the draws depend on the seed
        # and the sorted document names only, so every column sees the same resamples: paired
        res = {name: correlate(frame(records, f), human, field=judgment, levels="global", coefficients="pearson",
                               resample="documents", n_boot=boot, seed=seed) for name, f in cols.items()}
        for metric, j in METRICS:
            row = {"lang": language, "judgment": judgment, "metric": metric, "n": len(records), "base": base}
            for name, r in res.items():
                got = r.rows.iloc[j]
                ok = int(got["n_boot_valid"]) == boot
                row[name] = float(got["r"])
                row[name + " ci"] = (float(got["ci_low"]), float(got["ci_high"])) if ok else (math.nan, math.nan)
            diff = res["unicode"].replicates[("global", "pearson")][:, j] - res[base].replicates[("global", "pearson")][:, j]
            row["delta"] = row["unicode"] - row[base]
            row.update(paired_test(diff, row["delta"], boot))
            with np.errstate(invalid="ignore", divide="ignore"):   # raw ru ROUGE-2 is constant
                r23 = float(np.corrcoef(cols[base][:, j], cols["unicode"][:, j])[0, 1])
            row["p williams"] = williams_two_sided(row["unicode"], row[base], r23, len(records))
            rows.append(row)
    return rows


def paired_test(diff: np.ndarray, delta: float, boot: int) -> dict:
    """The difference's percentile interval and compare_metrics' two-sided bootstrap p (the
    replicates shifted to mean 0: p = (1 + #{|d* - mean| >= |delta|}) / (1 + B))."""
    if np.isnan(diff).any() or math.isnan(delta):
        return {"delta ci": (math.nan, math.nan), "p boot": math.nan}
    lo, hi, _ = interval(diff, 0.95)
    c = diff - diff.mean()
    return {"delta ci": (lo, hi), "p boot": (1 + int((np.abs(c) >= abs(delta) - 1e-12).sum())) / (1 + boot)}


def williams_two_sided(r_a: float, r_b: float, r_ab: float, n: int) -> float:
    if any(math.isnan(v) for v in (r_a, r_b, r_ab)):
        return math.nan
    t = williams(r_a, r_b, r_ab, n)["t"]
    return float(2 * student_t.sf(abs(t), n - 3))


def fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def fmt_ci(pair) -> str:
    return "n/a" if any(math.isnan(v) for v in pair) else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def fmt_p(p: float) -> str:
    return "n/a" if math.isnan(p) else ("<0.001" if p < 0.0005 else f"{p:.3f}")


def render(rows: list[dict]) -> str:
    head = ("| lang | judgment | metric | rouge155 r [95% CI] | rouge155 ids r [95% CI] | unicode, no stemmer r "
            "| unicode r [95% CI] | unicode - baseline [95% CI] | p (bootstrap) | p (Williams) |")
    out = [head, "|" + "---|" * 10]
    for r in rows:
        ids = f"{fmt(r['rouge155 ids'])} {fmt_ci(r['rouge155 ids ci'])}" if "rouge155 ids" in r else ""
        out.append(f"| {r['lang']} | {r['judgment'][:-2]} | {r['metric']} | {fmt(r['rouge155'])} "
                   f"{fmt_ci(r['rouge155 ci'])} | {ids} | {fmt(r.get('unicode, no stemmer', math.nan))} | "
                   f"{fmt(r['unicode'])} {fmt_ci(r['unicode ci'])} | {r['delta']:+.3f} {fmt_ci(r['delta ci'])} | "
                   f"{fmt_p(r['p boot'])} | {fmt_p(r['p williams'])} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="multi_summeval.jsonl")
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    args = ap.parse_args()
    by_lang = load(args.data)
    rows = [row for lang in LANGUAGES for row in language_rows(by_lang[lang], lang, args.boot, args.seed)]
    print(json.dumps(rows, indent=1) if args.json else render(rows))


if __name__ == "__main__":
    main()
