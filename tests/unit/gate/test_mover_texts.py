"""The movers' texts are the texts each run scored (issue #27, item 5): a run's input rewritten
in place after scoring (the nightly job's reused input path) is never shown as that run's text;
the scores' ``text_digest`` says which texts were scored, and ``output.keep_texts`` keeps them."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.gate.compare import compare
from pipeline.gate.format import format_result
from pipeline.gate.report import compare_report
from pipeline.gate.runs import INPUT_CHANGED, NO_DIGEST, load_run, run_texts

FAST = dict(n_boot=100, n_perm=100)
WORDS = ("the quick brown fox jumps over the lazy dog while a cat sleeps near the warm stove "
         "and birds sing in the tall green trees by the quiet river").split()


def _records(truncated: bool) -> list[dict]:
    recs = []
    for i in range(24):
        cand = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(18))
        if truncated and i % 3 == 0:
            cand = " ".join(cand.split()[:4]) + f" night two {i}"
        refs = [" ".join(WORDS[(i + k + 1) % len(WORDS)] for k in range(16)), f"reference {i} ünïcode 日本"]
        recs.append({"id": f"doc{i:02d}", "system": "sys", "candidate": cand, "references": refs})
    return recs


def _write(path: Path, recs: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return str(path)


def _score(inp: str, out: Path, *extra: str) -> str:
    from pipeline.config import load_config
    from pipeline.execution.driver import run_config

    cfg = load_config(None, [f"input.paths={json.dumps(inp)}", f"output.url={json.dumps(str(out))}",
                             "execution.mode=sync", "stats.n_boot=50", *extra])
    run_config(cfg, progress=False, log=lambda _m: None)
    return str(out)


def _nights(tmp_path: Path, *extra: str) -> tuple[str, str]:
    """Night 1 scores ``in/night.jsonl``; the file is rewritten (same path, truncated outputs) and
    night 2 scores it: the nightly job's reused input path."""
    inp = tmp_path / "in" / "night.jsonl"
    night1 = _score(_write(inp, _records(False)), tmp_path / "night1", *extra)
    night2 = _score(_write(inp, _records(True)), tmp_path / "night2", *extra)
    return night1, night2


def test_a_rewritten_input_is_never_shown_as_the_old_runs_text(tmp_path):
    base, new = _nights(tmp_path)
    res = compare(load_run(base), load_run(new), top=5, **FAST)
    old, now = {r["id"]: r for r in _records(False)}, {r["id"]: r for r in _records(True)}
    assert res["movers"] and res["texts_error"] is None
    for m in res["movers"]:
        assert old[m["id"]]["candidate"] != now[m["id"]]["candidate"]
        # the base run scored the old text: the input holds the new one now, so nothing is shown
        assert m["base_candidate"] is None and m["texts_note"] == {"base": INPUT_CHANGED}
        assert m["new_candidate"] == now[m["id"]]["candidate"]
        assert m["references"] == now[m["id"]]["references"]
    text = format_result(res)
    assert f"base: (text not shown: {INPUT_CHANGED})" in text
    assert "night two" in text and text.count("text not shown") == len(res["movers"])
    assert f"text not shown: {INPUT_CHANGED}" in compare_report(res, load_run(base), load_run(new))


def test_keep_texts_shows_the_old_text(tmp_path):
    base, new = _nights(tmp_path, "output.keep_texts=true")
    res = compare(load_run(base), load_run(new), top=5, **FAST)
    old, now = {r["id"]: r for r in _records(False)}, {r["id"]: r for r in _records(True)}
    assert res["movers"]
    for m in res["movers"]:
        assert m["base_candidate"] == old[m["id"]]["candidate"]
        assert m["new_candidate"] == now[m["id"]]["candidate"] and m["texts_note"] == {}
        assert m["references"] == now[m["id"]]["references"]
    part = next((Path(base) / "scores").rglob("part-*.parquet"))
    kept = pq.read_table(part).to_pylist()
    assert [(r["candidate"], r["references"]) for r in kept] == \
        [(r["candidate"], r["references"]) for r in _records(False)]
    assert "text not shown" not in format_result(res)


def test_an_unchanged_input_is_shown_and_a_run_without_digests_shows_nothing(tmp_path):
    inp = _write(tmp_path / "in" / "a.jsonl", _records(False))
    run = load_run(_score(inp, tmp_path / "a"))
    wanted = {("sys", "doc00"), ("sys", "doc03")}
    texts, why = run_texts(run, wanted)
    assert why == {} and texts[("sys", "doc03")]["candidate"] == _records(False)[3]["candidate"]
    run.scores = run.scores.drop(columns=["text_digest"])      # as a run of run format 3 reads
    assert run_texts(run, wanted) == ({}, dict.fromkeys(wanted, NO_DIGEST))


def _h(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


def _independent(candidate: str, references: list[str], source=None, signature: str = "", diagnostics=False) -> int:
    """docs/run-folder.md's definition (run format 5), written out again with hashlib."""
    inner = _h(signature + ("|source" if diagnostics else "")) + b"".join(_h(t) for t in [candidate, *references])
    if diagnostics:
        inner += bytes(8) if source is None else _h(source)
    return int.from_bytes(hashlib.blake2b(inner, digest_size=8).digest(), "little")


def test_the_digest_column_is_blake2b_of_the_documented_encoding():
    from pipeline.job.digest import legacy_digest, run_digest, text_digest, text_digests
    from pipeline.job.scores import score_table
    from pipeline.settings import ScoringSettings

    rows = [("", [""]), ("héllo wörld", ["a", "b c"]), ("a b", ["x"]), ("a", ["b", "x"]),
            ("same", ["same"]), ("same", ["same", ""]), ("ёж\n🦔 line two", ["ёж", "🦔"])]
    sources = [None, "src", "", None, "x", "x", "日本語のテキスト"]
    table = pa.table({"id": [str(i) for i in range(len(rows))], "system": ["s"] * len(rows),
                      "candidate": [c for c, _ in rows], "references": [r for _, r in rows],
                      "source": pa.array(sources, pa.string())})
    sig = "rouge:1|v:test"
    on = [_independent(c, r, s_, sig, True) for (c, r), s_ in zip(rows, sources)]
    off = [_independent(c, r, None, sig, False) for c, r in rows]
    assert len(set(on)) == len(set(off)) == len(rows)            # lengths cannot run into each other
    # the source is in the digest only with diagnostics, and a missing source is not an empty one
    assert _independent("a", ["b"], None, sig, True) != _independent("a", ["b"], "", sig, True)
    assert _independent("a", ["b"], None, sig, True) != _independent("a", ["b"], None, "other", True)
    assert _independent("a", ["b", "c"], None, sig, False) != _independent("a", ["b"], "c", sig, True)
    scores = score_table(table, ScoringSettings(rouge_types=("rouge1",)), signature=sig)
    assert scores.schema.field("text_digest").type == pa.uint64()
    assert scores.column("text_digest").to_pylist() == on
    plain = score_table(table, ScoringSettings(rouge_types=("rouge1",), diagnostics=False), signature=sig)
    assert plain.column("text_digest").to_pylist() == off
    assert [text_digest(c, r, s_, signature=sig, with_source=True) for (c, r), s_ in zip(rows, sources)] == on
    info = {"run_format": 5, "signature": sig, "config": {"scoring": {"diagnostics": True}}}
    assert [run_digest(info, c, r, s_) for (c, r), s_ in zip(rows, sources)] == on
    old = [int.from_bytes(hashlib.blake2b(b"".join(_h(t) for t in [c, *r]), digest_size=8).digest(), "little")
           for c, r in rows]
    assert [run_digest({"run_format": 4}, c, r, None) for c, r in rows] == [legacy_digest(c, r) for c, r in rows] == old
    want = on
    # a slice of chunked columns, as a task's slice of a unit
    chunked = pa.concat_tables([table.slice(0, 3), table.slice(3)])
    assert text_digests(chunked.column("candidate").slice(2), chunked.column("references").slice(2),
                        chunked.column("source").slice(2), signature=sig, with_source=True).tolist() == want[2:]
