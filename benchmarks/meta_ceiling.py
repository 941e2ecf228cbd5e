"""Jackknifed ROUGE of systems and the human-vs-human ceiling on the 4-reference corpora.

    python benchmarks/meta_ceiling.py [--rule A|B]

Data: ``../shared/data/rouge155_sample_sl2003`` (DUC-2003 very short summaries, 8 peers) and
``duc2004_pyrouge_tests`` (DUC-2004 task 2, 2 systems), 4 references per summary (internal test
data, not shipped). Scores: the ``rouge155`` profile with ``-m`` and ``-f A`` (``--rule B``:
best-recall reference) inside each leave-one-out subset (:mod:`pipeline.scoring.jackknife`):
a system summary is the mean of its 4 scores against 3 references, a human reference is
scored against the other 3; also each system against all 4 references (not jackknifed), to
show how much the extra reference lifts a score. Nothing here is a test: it prints tables.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from pipeline import RougeScorer
from pipeline.scoring.jackknife import ceiling_table

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests"]
TYPES = ["rouge1", "rouge2", "rougeL", "rougeSU4"]


def all_refs_means(scorer, records, system) -> list[float]:
    rows = [r for r in records if r["system"] == system]
    s = np.asarray(scorer.score_arrays([r["references"] for r in rows], [r["candidate"] for r in rows]).scores)
    return [float(s[:, t, 1].mean()) for t in range(len(TYPES))]


def table(name: str, rule: str) -> str:
    with (DATA / name / f"{name}.jsonl").open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    scorer = RougeScorer(TYPES, use_stemmer=True, profile="rouge155", multi_ref=rule)
    rows = ceiling_table(scorer, records, TYPES)
    head = "| summaries | n | " + " | ".join(f"{t} R jackknifed | {t} R all 4" for t in TYPES) + " |"
    out = [f"**{name}** (`-m -f {rule}`, mean recall)", "", head, "|" + "---|" * (2 + 2 * len(TYPES))]
    for row in rows:
        full = all_refs_means(scorer, records, row["system"]) if row["system"] != "(human)" else [None] * len(TYPES)
        cells = [f"{row[f'{t}_recall']:.4f} | " + ("-" if v is None else f"{v:.4f}") for t, v in zip(TYPES, full)]
        out.append(f"| {row['system']} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rule", choices=["A", "B"], default="A")
    args = ap.parse_args()
    print("\n\n".join(table(name, args.rule) for name in DATASETS))


if __name__ == "__main__":
    main()
