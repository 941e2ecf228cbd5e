"""The profile registry (pipeline.profiles): adding a profile is one object and one registry
entry; the built-in profiles keep their signatures, numbers and multi_ref defaults."""
from __future__ import annotations

import json
import re
import unicodedata
from importlib.metadata import version

import numpy as np
import pytest
import yaml
from rouge_score import rouge_scorer

from pipeline import runfolder
from pipeline import RougeScorer, compute, job, profiles
from pipeline.cli import main as cli
from pipeline.config import ConfigError, RunConfig, load_config
from pipeline.execution import driver
from pipeline.profiles.base import Profile, rouge_score_scorer
from pipeline.signature import Signature
from pipeline.text.unicode import UnicodeTokenizer

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
EXAMPLES = [  # (references, candidate); the third has references scoring differently under each rule
    (["The cat sat on the mat.\nIt purred."], "the cat is on the mat, purring!"),
    (["Stocks fell 3% on Monday; bonds rose."], "stocks rose, bonds fell on monday"),
    (["a b c d e f", "a x y", "c d e f g h i j k"], "a b c d e x y"),
]


class PunctTokenizer:
    """Words and punctuation marks as tokens: not a tokenizer any profile has."""

    name = "punct"

    def tokenize(self, text):
        return re.findall(r"\w+|[^\w\s]", text.lower())


class ToyProfile(Profile):
    name = "toy-punct"
    outputs = ("toy_rows.json",)

    def build_scorer(self, s, tokenizer=None):
        return rouge_score_scorer(s, tokenizer or PunctTokenizer())

    def signature_parts(self, s):
        return {"tok": "punct", "profile": self.name}

    def extra_outputs(self, systems, s, stats, read_scores):
        return {"toy_rows.json": {system: read_scores(system, ["id"]).num_rows for system in systems}}


def _oracle(tokenizer=None, use_stemmer=False, types=TYPES):
    """rouge-score 0.1.2's numbers: (examples, types, P/R/F), max-F over the references."""
    sc = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer, tokenizer=tokenizer)
    return np.array([[tuple(sc.score_multi(refs, cand)[t]) for t in types] for refs, cand in EXAMPLES])


def _records(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"e{i}", "candidate": c, "references": r}) + "\n"
                           for i, (r, c) in enumerate(EXAMPLES)))
    return src


def _cfg(src, out, **scoring):
    return RunConfig.from_dict({"input": {"layout": "records", "paths": str(src)}, "output": {"url": str(out)},
                                "scoring": {"rouge_types": TYPES, "diagnostics": False, **scoring},
                                "stats": {"n_boot": 0}, "execution": {"mode": "sync", "retries": 0}})


def _run_scores(cfg):
    driver.run(cfg, None, progress=False, log=lambda _m: None)
    table = runfolder.read_scores(cfg.output.url, "")
    return np.array([[[table.column(f"{t}_{s}")[i].as_py() for s in ("precision", "recall", "fmeasure")]
                      for t in TYPES] for i in range(table.num_rows)])


def test_a_registered_toy_profile_validates_scores_signs_and_writes_its_output(tmp_path, monkeypatch):
    monkeypatch.setitem(profiles.REGISTRY, ToyProfile.name, ToyProfile())
    expected = _oracle(PunctTokenizer())
    cfg = _cfg(_records(tmp_path), tmp_path / "run", profile="toy-punct")
    assert np.array_equal(_run_scores(cfg), expected)
    sig = Signature.from_config(cfg)
    assert (sig.tok, sig.stem, sig.profile) == ("punct", "no", "toy-punct")
    assert json.loads((tmp_path / "run" / "toy_rows.json").read_text()) == {"": len(EXAMPLES)}
    # the public scorer takes it by name too
    got = RougeScorer(TYPES, profile="toy-punct").score_batch([r for r, _ in EXAMPLES], [c for _, c in EXAMPLES])
    assert np.array_equal(np.array([[tuple(d[t]) for t in TYPES] for d in got]), expected)
    # the base profile refuses what only rouge155 reads
    with pytest.raises(ConfigError, match="scoring.remove_stopwords: only with profile 'rouge155'"):
        _cfg(tmp_path / "in.jsonl", tmp_path / "r2", profile="toy-punct", remove_stopwords=True)


def test_an_unregistered_profile_is_a_config_error_naming_the_registered_ones(tmp_path):
    with pytest.raises(ConfigError, match="scoring.profile: expected one of rouge-score-0.1.2, unicode, rouge155, "
                                          "got 'toy-punct'"):
        _cfg(tmp_path / "in.jsonl", tmp_path / "run", profile="toy-punct")
    with pytest.raises(ValueError, match="taken"):
        profiles.register(ToyProfile.__new__(type("Again", (ToyProfile,), {"name": "unicode"})))


def test_built_in_profiles_score_as_the_oracle_through_a_run(tmp_path):
    """rouge-score 0.1.2 on its own tokenizer, on the whitespace one, and on the unicode profile's
    tokenizer (rouge-score's counting is the oracle; the tokenizer is the profile's)."""
    src = _records(tmp_path)
    ws = type("WS", (), {"tokenize": staticmethod(lambda t: t.lower().split())})()
    for k, (scoring, oracle) in enumerate([
            ({}, _oracle()), ({"use_stemmer": True}, _oracle(use_stemmer=True)),
            ({"tokenizer": "whitespace"}, _oracle(ws)),
            ({"profile": "unicode", "language": "de", "stemming": "snowball"},
             _oracle(UnicodeTokenizer("de", stem=True)))]):
        assert np.array_equal(_run_scores(_cfg(src, tmp_path / f"run{k}", **scoring)), oracle), scoring


def _sig(**scoring) -> str:
    cfg = RunConfig.from_dict({"input": {"layout": "records", "paths": "/tmp/x.jsonl"}, "output": {"url": "/tmp/r"},
                               "scoring": scoring})
    return re.sub(r"\|v:[^|]*", "", str(Signature.from_config(cfg)))  # the pipeline's version left out


BS = "bs:poisson-1000-buckets4096|ci:95|seed:12345"


def test_the_signatures_of_the_built_in_profiles_are_unchanged():
    """Literal strings, as the pipeline wrote them before the registry (versions of the
    installed packages filled in)."""
    nltk = f"porter-nltk{version('nltk')}"
    uni = f"-ucd{unicodedata.unidata_version}-regex{version('regex')}"
    assert _sig() == f"rouge:1,2,L,Lsum|tok:default|stem:no|split:newline|multiref:max_f|{BS}|profile:rouge-score-0.1.2"
    assert _sig(use_stemmer=True) == (f"rouge:1,2,L,Lsum|tok:default|stem:{nltk}|split:newline|multiref:max_f|{BS}"
                                      "|profile:rouge-score-0.1.2")
    assert _sig(tokenizer="whitespace", use_stemmer=True) == (
        f"rouge:1,2,L,Lsum|tok:whitespace|stem:no|split:newline|multiref:max_f|{BS}|profile:rouge-score-0.1.2")
    assert _sig(sentence_splitter="sentencex", language="de") == (
        f"rouge:1,2,L,Lsum|tok:default|stem:no|split:sentencex(de)|multiref:max_f|{BS}|profile:rouge-score-0.1.2")
    assert _sig(rouge_types=["rouge1", "rougeW-1.2", "rougeSU4"], multi_ref="B", alpha=0.25) == (
        f"rouge:1,W-1.2,SU4|tok:default|stem:no|split:newline|multiref:B|{BS}|profile:rouge-score-0.1.2|alpha:0.25")
    assert _sig(profile="unicode") == (f"rouge:1,2,L,Lsum|tok:unicode(en)-nfkc-casefold-words+cjkchars{uni}"
                                       f"|stem:no|split:newline|multiref:max_f|{BS}|profile:unicode")
    assert _sig(profile="unicode", language="de", stemming="snowball") == (
        f"rouge:1,2,L,Lsum|tok:unicode(de)-nfkc-casefold-words+cjkchars{uni}"
        f"|stem:snowball-german-snowballstemmer{version('snowballstemmer')}|split:newline|multiref:max_f|{BS}"
        "|profile:unicode")
    assert _sig(profile="rouge155") == (f"rouge:1,2,L,Lsum|tok:rouge155|stem:no|split:newline|multiref:A|{BS}"
                                        "|profile:rouge155-1.5.5|opts:-n 2 -f A -p 0.5")
    assert _sig(profile="rouge155", use_stemmer=True, remove_stopwords=True, length_limit_words=100,
                rouge_types=["rouge1", "rouge2", "rougeL"]) == (
        f"rouge:1,2,L|tok:rouge155|stem:rouge155-porter+wordnet2.0exc|split:newline|multiref:A|{BS}"
        "|profile:rouge155-1.5.5|opts:-n 2 -m -s -l 100 -f A -p 0.5")
    assert _sig(profile="rouge155", multi_ref="B", rouge_types=["rouge1", "rougeW-1.2", "rougeS4"], alpha=0.8) == (
        f"rouge:1,W-1.2,S4|tok:rouge155|stem:no|split:newline|multiref:B|{BS}"
        "|profile:rouge155-1.5.5|alpha:0.8|opts:-n 1 -x -w 1.2 -2 4 -f B -p 0.8")


def test_multi_ref_default_is_the_profiles_through_every_entry_point(tmp_path, capsys):
    """Unset, multi_ref is max_f, and A (pooled) with profile rouge155: in a config file, the CLI,
    pipeline.compute, RougeScorer and the settings type."""
    refs, cand = EXAMPLES[2]
    pooled = RougeScorer(["rouge1"], profile="rouge155", multi_ref="A").score_multi(refs, cand)
    best = RougeScorer(["rouge1"], profile="rouge155", multi_ref="B").score_multi(refs, cand)
    assert pooled != best  # the example tells the rules apart
    for profile, rule in (("rouge-score-0.1.2", "max_f"), ("unicode", "max_f"), ("rouge155", "A")):
        conf = tmp_path / f"{profile}.yaml"
        conf.write_text(yaml.safe_dump({"input": {"layout": "records", "paths": str(tmp_path / "in.jsonl")},
                                        "output": {"url": str(tmp_path / "run")}, "scoring": {"profile": profile}}))
        assert load_config(conf).scoring.multi_ref == rule
        capsys.readouterr()
        assert cli.main(["score", "--config", str(conf), "--print-config"]) == 0
        assert yaml.safe_load(capsys.readouterr().out)["scoring"]["multi_ref"] == rule
        assert RougeScorer(["rouge1"], profile=profile).multi_ref == rule
        assert job.ScoringSettings(profile=profile).multi_ref == rule
        assert f"|multiref:{rule}|" in compute([cand], [refs], rouge_types=["rouge1"], profile=profile,
                                               n_boot=0, return_result=True).signature
    assert RougeScorer(["rouge1"], profile="rouge155").score_multi(refs, cand) == pooled
    got = compute([cand], [refs], rouge_types=["rouge1"], profile="rouge155", use_aggregator=False)
    assert got == {"rouge1": [pooled["rouge1"].fmeasure]}


def test_the_rouge155_profiles_file_is_a_run_format_file():
    """The profile names its own output; the run folder's owner must know it as one of its files
    (--overwrite deletes only those)."""
    from pipeline.runfolder import names

    assert profiles.get("rouge155").outputs == (names.ROUGE155_CORPUS,)
    assert names.is_run_file(names.ROUGE155_CORPUS)
