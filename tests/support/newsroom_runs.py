"""Runs of real data (shared/data/newsroom: 420 pairs, 7 systems, source documents) for the
compare / report tests: the dataset as it is, and copies with injected output regressions."""
from __future__ import annotations

import json
from pathlib import Path

from support.shared import DATA, DATA_REASON, HAVE_DATA, load_records

FIELDS = ("id", "system", "candidate", "references", "source")
HEADER = "BREAKING NEWS : the latest update from our newsroom desk"
PADDING = " Click here to read more . Subscribe for more updates and stories ." * 3


def records(dataset: str = "newsroom") -> list[dict]:
    """The dataset's records with ``doc_id`` kept (ids are ``<dataset>:<doc_id>:<system>``)."""
    if not HAVE_DATA:
        import pytest

        pytest.skip(DATA_REASON)
    return [{k: r[k] for k in (*FIELDS, "doc_id")} for r in load_records(DATA, dataset)]


DOC_KEY = "(.*):{system}$"   # the document of a shared/data id (compare --systems --doc-key)


def injected(recs: list[dict], kind: str, every: int = 3, systems=None) -> tuple[list[dict], set[str]]:
    """A copy of ``recs`` with ``kind`` injected into every ``every``-th example of each system (of
    ``systems`` only, when given); returns the records and the injected ids."""
    out, ids, seen = [], set(), {}
    for r in recs:
        r = dict(r)
        k = seen[r["system"]] = seen.get(r["system"], -1) + 1
        if k % every == 0 and (systems is None or r["system"] in systems):
            words = r["candidate"].split()
            if kind == "truncation":
                r["candidate"] = " ".join(words[: max(1, len(words) // 3)])
            elif kind == "header":
                r["candidate"] = f"{HEADER}\n{HEADER}\n{r['candidate']}"
            elif kind == "padding":
                r["candidate"] = r["candidate"] + PADDING
            else:
                raise ValueError(kind)
            ids.add(r["id"])
        out.append(r)
    return out, ids


def write(path: Path, recs: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({k: r[k] for k in FIELDS}) + "\n" for r in recs), encoding="utf-8")
    return str(path)


def score(inp: str, out: Path, *extra: str) -> Path:
    """Score ``inp`` into ``out`` in sync mode (in process, like ``rouge-pipeline score --sync``)."""
    from pipeline.config import load_config
    from pipeline.execution.driver import run_config

    cfg = load_config(None, [f"input.paths={json.dumps(inp)}", f"output.url={json.dumps(str(out))}",
                             "execution.mode=sync", "stats.n_boot=200", *extra])
    run_config(cfg, progress=False, log=lambda _m: None)
    return out


def swapped(recs: list[dict], system: str, other: str) -> list[dict]:
    """A copy where ``system``'s candidates are ``other``'s outputs for the same documents (a
    deployment that serves the wrong model under the right name)."""
    by_doc = {r["doc_id"]: r["candidate"] for r in recs if r["system"] == other}
    return [{**r, "candidate": by_doc[r["doc_id"]]} if r["system"] == system else dict(r) for r in recs]


def resampled(recs: list[dict], share: float, seed: int) -> list[dict]:
    """Realistic night-to-night sampling noise: for a ``share`` of each system's documents, the
    candidate is replaced by another system's output for the same document (seeded)."""
    import random

    rng = random.Random(seed)
    by_doc: dict = {}
    for r in recs:
        by_doc.setdefault(r["doc_id"], []).append(r["candidate"])
    out = []
    for r in recs:
        r = dict(r)
        if rng.random() < share:
            choices = [c for c in by_doc[r["doc_id"]] if c != r["candidate"]]
            if choices:
                r["candidate"] = rng.choice(choices)
        out.append(r)
    return out
