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
"BERT+PG"). Intervals: percentile bootstrap over documents (a document's two summaries are
drawn together), ``--boot`` resamples from ``numpy.random.default_rng(seed)``, the same
resamples for every column, so the difference unicode - rouge155 gets a paired interval and a
two-sided bootstrap p. Williams' test (dependent correlations sharing the human variable;
assumes independent summaries, which pairs of summaries of one document are not) is printed
beside it. Nothing here is a test: it prints a table.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from pipeline import RougeScorer
from pipeline.text.snowball import SNOWBALL_LANGUAGES

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "multi_summeval" / "multi_summeval.jsonl"
LANGUAGES = ["en", "de", "es", "fr", "id", "ru", "tr", "zh"]
JUDGMENTS = ["focus_z", "coverage_z"]
METRICS = [("R1-F", 0), ("R2-F", 1), ("RL-F", 2)]
R155_TYPES = ["rouge1", "rouge2", "rougeL"]
UNI_TYPES = ["rouge1", "rouge2", "rougeLsum"]


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


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of ``x`` and ``y`` (NaN where one row is constant)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(axis=-1) / np.where(den > 0, den, 1), np.nan)


def doc_resamples(records: list[dict], boot: int, rng: np.random.Generator) -> np.ndarray:
    """(boot, n) row indices: documents drawn with replacement, each with all its summaries."""
    docs: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        docs.setdefault(r["doc_id"], []).append(i)
    groups = list(docs.values())
    size = {len(g) for g in groups}
    assert len(size) == 1, "every document has the same number of summaries"
    table = np.asarray(groups)
    draws = rng.integers(0, len(groups), size=(boot, len(groups)))
    return table[draws].reshape(boot, -1)


def williams_p(r12: float, r13: float, r23: float, n: int) -> float:
    """Two-sided p of Williams' test that corr(h, a) == corr(h, b) (Steiger 1980, eq. 7)."""
    if any(math.isnan(v) for v in (r12, r13, r23)):
        return math.nan
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    den = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    t = (r13 - r12) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(den)
    return float(2 * student_t.sf(abs(t), n - 3))


def ci(values: np.ndarray) -> tuple[float, float]:
    ok = values[~np.isnan(values)]
    return (math.nan, math.nan) if len(ok) < len(values) else tuple(np.percentile(values, [2.5, 97.5]))


def language_rows(records: list[dict], language: str, boot: int, seed: int) -> list[dict]:
    cols = columns(records, language)
    idx = doc_resamples(records, boot, np.random.default_rng(seed))
    rows = []
    for judgment in JUDGMENTS:
        human = np.array([r["human"][judgment] for r in records])
        for metric, j in METRICS:
            row = {"lang": language, "judgment": judgment, "metric": metric, "n": len(records)}
            boots = {}
            for name, scores in cols.items():
                x = scores[:, j]
                row[name] = float(pearson_rows(human, x))
                boots[name] = pearson_rows(human[idx], x[idx])
                row[name + " ci"] = ci(boots[name])
            base = "rouge155 ids" if "rouge155 ids" in cols else "rouge155"
            diff = boots["unicode"] - boots[base]
            row["base"] = base
            row["delta"] = row["unicode"] - row[base]
            row["delta ci"] = ci(diff)
            # two-sided percentile-bootstrap p; 0 means below 2 / boot
            row["p boot"] = float(min(1.0, 2 * min((diff <= 0).mean(), (diff >= 0).mean()))) \
                if not np.isnan(diff).any() else math.nan
            row["p williams"] = williams_p(row[base], row["unicode"],
                                           float(pearson_rows(cols[base][:, j], cols["unicode"][:, j])), len(records))
            rows.append(row)
    return rows


def fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def fmt_ci(pair) -> str:
    return "n/a" if any(math.isnan(v) for v in pair) else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def fmt_p(p: float, boot: int) -> str:
    return "n/a" if math.isnan(p) else (f"<{2 / boot:.3f}" if p == 0 else f"{p:.3f}")


def render(rows: list[dict], boot: int) -> str:
    head = ("| lang | judgment | metric | rouge155 r [95% CI] | rouge155 ids r [95% CI] | unicode, no stemmer r "
            "| unicode r [95% CI] | unicode - baseline [95% CI] | p (bootstrap) | p (Williams) |")
    out = [head, "|" + "---|" * 10]
    for r in rows:
        ids = f"{fmt(r['rouge155 ids'])} {fmt_ci(r['rouge155 ids ci'])}" if "rouge155 ids" in r else ""
        out.append(f"| {r['lang']} | {r['judgment'][:-2]} | {r['metric']} | {fmt(r['rouge155'])} "
                   f"{fmt_ci(r['rouge155 ci'])} | {ids} | {fmt(r.get('unicode, no stemmer', math.nan))} | "
                   f"{fmt(r['unicode'])} {fmt_ci(r['unicode ci'])} | {r['delta']:+.3f} {fmt_ci(r['delta ci'])} | "
                   f"{fmt_p(r['p boot'], boot)} | {fmt(r['p williams'])} |")
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
    print(json.dumps(rows, indent=1) if args.json else render(rows, args.boot))


if __name__ == "__main__":
    main()
