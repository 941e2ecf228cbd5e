"""``RougeScorer`` with every family type, multi-reference rule and profile gives, per example,
the numbers a YAML run (``--sync``) with the same ``scoring`` settings writes."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import config, examples
from pipeline import RougeScorer
from pipeline.config import RunConfig
from pipeline.execution.driver import run

FAMILY = ["rouge1", "rouge2", "rougeL", "rougeLsum", "rougeW-1.2", "rougeS4", "rougeSU4", "rougeS*", "rougeSU*"]
CASES = [
    *({"rouge_types": FAMILY, "multi_ref": rule} for rule in ("max_f", "pooled", "A", "best_recall", "B", "mean")),
    {"rouge_types": FAMILY, "alpha": 0.8, "use_stemmer": True},
    {"rouge_types": ["rouge1", "rougeL", "rougeLsum", "rougeW-1.2", "rougeSU4"], "profile": "unicode",
     "language": "de", "stemming": "snowball", "multi_ref": "mean"},
    {"rouge_types": ["rouge1", "rougeLsum"], "profile": "unicode", "cjk": "chars"},
    {"rouge_types": ["rouge1", "rouge2", "rougeL", "rougeW-1.2", "rougeSU4"], "profile": "rouge155",
     "use_stemmer": True, "remove_stopwords": True},
    {"rouge_types": ["rouge1", "rougeL", "rougeS*"], "profile": "rouge155", "multi_ref": "B", "alpha": 0.3,
     "length_limit_words": 8},
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("options")
    recs = [{"id": i, "system": "s", "candidate": c["sysA"], "references": refs}
            for i, refs, c in examples(24, seed=3)]
    recs.append({"id": "u", "system": "s", "candidate": "Die Katzen saßen auf der Matte.\n东京 Straße",
                 "references": ["die Katze saß auf der Matte", "Straße 东京"]})
    recs.append({"id": "empty-ref", "system": "s", "candidate": "a b", "references": ["...", "a"]})
    path = root / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return root, path, recs


def _scorer_kwargs(case):
    kw = dict(case)
    return kw.pop("rouge_types"), kw


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items() if k != "rouge_types"))
def test_scorer_equals_the_yaml_run(corpus, case, tmp_path):
    root, path, recs = corpus
    out = tmp_path / "run"
    cfg = RunConfig.from_dict(config({"layout": "records", "paths": str(path)}, out,
                                     scoring={**case, "diagnostics": False}))
    run(cfg, None, progress=False, log=lambda m: None)
    table = pa.concat_tables(pq.read_table(p) for p in sorted((out / "scores").glob("*/*.parquet")))
    by_id = {i: k for k, i in enumerate(table.column("id").to_pylist())}
    qrows = [q for p in (out / "quarantine").glob("*.parquet") for q in pq.read_table(p).to_pylist()]
    quarantined = {q["id"] for q in qrows}
    assert all("ROUGE-W is undefined for a reference without tokens" in q["reason"] for q in qrows)
    assert sorted(by_id) == sorted(r["id"] for r in recs if r["id"] not in quarantined)
    # a run quarantines an example whose ROUGE-W is undefined (a reference without tokens);
    # RougeScorer gives NaN for that type there
    assert quarantined <= {"empty-ref"} and (not quarantined or any(t.startswith("rougeW") for t in case["rouge_types"]))
    types, kw = _scorer_kwargs(case)
    scorer = RougeScorer(types, **kw)
    refs = [r["references"] for r in recs]
    cands = [r["candidate"] for r in recs]
    batch = scorer.score_batch(refs, cands)
    arrays = scorer.score_arrays(refs, cands).scores
    scored_table = scorer.score_table(pa.table({"candidate": cands, "references": refs}))
    for e, rec in enumerate(recs):
        if rec["id"] in quarantined:
            w = [t for t in types if t.startswith("rougeW")]
            assert all(np.isnan(batch[e][t][2]) for t in w) and not np.isnan(batch[e]["rouge1"][2])
            continue
        row = by_id[rec["id"]]
        one = scorer.score_multi(rec["references"], rec["candidate"])
        single = scorer.score(rec["references"][0], rec["candidate"]) if len(rec["references"]) == 1 else None
        for t, name in enumerate(types):
            for k, stat in enumerate(("precision", "recall", "fmeasure")):
                want = table.column(f"{name}_{stat}")[row].as_py()
                got = [batch[e][name][k], one[name][k], arrays[e, t, k],
                       scored_table.column(f"{name}_{stat}")[e].as_py()]
                if single is not None:
                    got.append(single[name][k])
                assert all(g == want or (np.isnan(g) and np.isnan(want)) for g in got), (rec["id"], name, stat,
                                                                                        want, got)


def test_scorer_options_are_refused_as_the_config_refuses_them():
    with pytest.raises(ValueError, match="multi_ref: expected one of"):
        RougeScorer(["rouge1"], multi_ref="best")
    with pytest.raises(ValueError, match=r"alpha: expected a number in \[0, 1\]"):
        RougeScorer(["rouge1"], alpha=2)
    with pytest.raises(ValueError, match="profile: expected one of"):
        RougeScorer(["rouge1"], profile="nope")
    with pytest.raises(ValueError, match="custom tokenizer cannot be combined"):
        RougeScorer(["rouge1"], profile="unicode", tokenizer=str.split)
    with pytest.raises(ValueError, match="Invalid rouge type: rougeW"):
        RougeScorer(["rougeW"])


def test_a_custom_tokenizer_reaches_the_family():
    scorer = RougeScorer(["rougeSU4", "rouge1"], tokenizer=str.split, multi_ref="pooled")
    plain = RougeScorer(["rougeSU4", "rouge1"], multi_ref="pooled")
    # "Cat" and "cat" differ for str.split and not for rouge-score's tokenizer
    assert scorer.score("Cat sat", "cat sat")["rouge1"].fmeasure == 0.5
    assert plain.score("Cat sat", "cat sat")["rouge1"].fmeasure == 1.0


@pytest.mark.parametrize("method", ["score", "score_multi", "score_batch", "score_table", "score_arrays",
                                    "score_arrow", "to_dicts", "encode", "tokenizer_name"])
def test_public_methods_have_docstrings(method):
    assert (getattr(RougeScorer, method).__doc__ or "").strip()
