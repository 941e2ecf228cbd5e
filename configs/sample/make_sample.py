"""Generate the bundled sample corpus (synthetic, licence-clean): ``python configs/sample/make_sample.py``.

200 examples: 100 documents x 2 systems (``lead`` and ``abstractive``), each with 1-3
references, split over two JSONL shards (one of them gzip-compressed).  Deterministic.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

SUBJECTS = ["the council", "a local farmer", "the research team", "city officials", "the river authority",
            "a small company", "the school board", "volunteers", "the hospital", "engineers"]
VERBS = ["approved", "announced", "rejected", "studied", "repaired", "funded", "opened", "delayed",
         "measured", "reviewed"]
OBJECTS = ["a new bridge", "the annual budget", "a water treatment plan", "the old library",
           "a solar project", "the harvest report", "a bus route", "the flood defences",
           "a training programme", "the market square"]
TAILS = ["on Monday", "after a long debate", "despite protests", "ahead of winter", "for the third time",
         "with public support", "at a cost of two million", "in the northern district", "last week",
         "without comment"]


def sentence(rng: random.Random) -> str:
    s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
    return s[0].upper() + s[1:]


def main(out: Path = Path(__file__).parent) -> None:
    rng = random.Random(20240601)
    docs = []
    for i in range(100):
        facts = [sentence(rng) for _ in range(rng.randint(3, 6))]
        refs = []
        for _ in range(rng.randint(1, 3)):
            k = rng.randint(1, min(3, len(facts)))
            refs.append("\n".join(rng.sample(facts, k)))
        docs.append((f"doc-{i:03d}", facts, refs))
    shards = {"part-0.jsonl": [], "part-1.jsonl.gz": []}
    for n, (doc_id, facts, refs) in enumerate(docs):
        shard = "part-0.jsonl" if n < 50 else "part-1.jsonl.gz"
        lead = "\n".join(facts[:2])
        abstractive = "\n".join(sentence(rng) if rng.random() < 0.4 else f for f in rng.sample(facts, 2))
        for system, cand in (("lead", lead), ("abstractive", abstractive)):
            shards[shard].append({"id": doc_id, "system": system, "candidate": cand, "references": refs,
                                  "source": " ".join(facts)})
    for name, records in shards.items():
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        if name.endswith(".gz"):
            data = gzip.compress(data, mtime=0)
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
