"""Small sharded corpora for the job / driver / CLI tests (every layout, with bad records)."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

WORDS = ("alpha beta gamma delta river bridge council budget school market winter summer report "
         "north south plan vote road rail water light green stone").split()


def _text(rng: random.Random, n_sent: int, n_words: int) -> str:
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, n_words))) + "."
                     for _ in range(n_sent))


def examples(n_docs: int = 60, seed: int = 7):
    """(id, refs, {system: candidate}); a few long documents make the cost planning matter."""
    rng = random.Random(seed)
    out = []
    for i in range(n_docs):
        long = i % 17 == 3
        refs = [_text(rng, 12 if long else rng.randint(1, 3), 40 if long else 12)
                for _ in range(rng.randint(1, 3))]
        cands = {s: _text(rng, 10 if long else rng.randint(1, 3), 30 if long else 10) for s in ("sysA", "sysB")}
        out.append((f"d{i:03d}", refs, cands))
    return out


def write_records(root: Path, n_docs: int = 60, bad: bool = True) -> str:
    """Records layout: two JSONL shards (one gzip) + one Parquet shard; returns a glob."""
    root.mkdir(parents=True, exist_ok=True)
    recs = [{"id": i, "system": s, "candidate": c, "references": refs}
            for i, refs, cands in examples(n_docs) for s, c in cands.items()]
    third = len(recs) // 3
    lines0 = [json.dumps(r) for r in recs[:third]]
    if bad:
        lines0 += ["{not json", json.dumps({"id": "dq", "system": "sysA", "candidate": None, "references": ["x"]}),
                   json.dumps(recs[0])]                       # malformed, null candidate, duplicate id
    (root / "shard-0.jsonl").write_text("\n".join(lines0) + "\n", encoding="utf-8")
    (root / "shard-1.jsonl.gz").write_bytes(
        gzip.compress(("\n".join(json.dumps(r) for r in recs[third:2 * third]) + "\n").encode(), mtime=0))
    pq.write_table(pa.Table.from_pylist(recs[2 * third:]), root / "shard-2.parquet", row_group_size=16)
    return str(root / "shard-*")


def write_paired(root: Path, n_docs: int = 40) -> tuple[str, str]:
    """Paired layout: candidates in 2 shards, references in 2 shards; ids missing on each side."""
    root.mkdir(parents=True, exist_ok=True)
    ex = examples(n_docs, seed=11)
    cands = [{"id": i, "system": s, "candidate": c} for i, _, cs in ex for s, c in cs.items()]
    cands += [{"id": "orphan-cand", "system": "sysA", "candidate": "no reference for me"}]
    refs = [{"id": i, "references": r} for i, r, _ in ex if i != "d005"]
    refs += [{"id": "orphan-ref", "references": ["nobody asks"]}]
    half = len(cands) // 2
    (root / "cands").mkdir(exist_ok=True)
    (root / "refs").mkdir(exist_ok=True)
    (root / "cands" / "c-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in cands[:half]))
    pq.write_table(pa.Table.from_pylist(cands[half:]), root / "cands" / "c-1.parquet")
    rh = len(refs) // 2
    (root / "refs" / "r-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs[:rh]))
    (root / "refs" / "r-1.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(r) + "\n" for r in refs[rh:]).encode(), mtime=0))
    return str(root / "cands" / "c-*"), str(root / "refs" / "*")


def write_lines(root: Path, n_docs: int = 30) -> tuple[str, str]:
    """Lines layout: one candidate folder per system, two line files each."""
    ex = examples(n_docs, seed=5)
    for sub in ("sysA", "sysB", "refs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for k, chunk in enumerate((ex[: n_docs // 2], ex[n_docs // 2:])):
        (root / "refs" / f"f{k}.txt").write_text("".join(r[0].replace("\n", " ") + "\n" for _, r, _ in chunk))
        for s in ("sysA", "sysB"):
            (root / s / f"f{k}.txt").write_text("".join(c[s].replace("\n", " ") + "\n" for _, _, c in chunk))
    return str(root / "sys*" / "*.txt"), str(root / "refs" / "*.txt")


def config(inp: dict, out: Path, **sections) -> dict:
    d = {"input": inp, "output": {"url": str(out)},
         "stats": {"seed": 3, "n_boot": 200, "confidence": 0.95, "bootstrap": "poisson"},
         "execution": {"mode": "sync", "retries": 1}}
    for k, v in sections.items():
        if isinstance(v, dict):
            d.setdefault(k, {}).update(v)
        else:
            d[k] = v
    return d


def run_files(run: Path, pattern: str) -> dict[str, bytes]:
    """The bytes of a run folder's files matching ``pattern``, by relative path."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.glob(pattern))}


def run_outputs(run: Path, markers: bool = False) -> dict[str, bytes]:
    """Scores, quarantine and statistics files of a run (and the completion markers)."""
    out = run_files(run, "scores/**/*.parquet")
    out.update(run_files(run, "quarantine/*.parquet"))
    out.update(run_files(run, "stats/*"))
    if markers:
        out.update(run_files(run, "_done/*.json"))
    return out


def score_records(root: Path, records: list[dict], target_rows: int) -> Path:
    """``records`` written as one JSONL file under ``root`` and scored in this process into ``root/run``
    (small ``target_rows``: several parts per system); the finished run folder."""
    from pipeline.config import RunConfig  # the package is imported by the tests that use this, not by support
    from pipeline.execution.driver import run

    src = root / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = root / "run"
    cfg = config({"layout": "records", "paths": str(src)}, out, execution={"target_rows": target_rows})
    run(RunConfig.from_dict(cfg), None, progress=False, log=lambda m: None)
    assert (out / "_SUCCESS").exists()
    return out
