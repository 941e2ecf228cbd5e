"""pipeline.signature: every setting that changes a number, and nothing else."""
from __future__ import annotations

import pytest

from pipeline import __version__
from pipeline.config import RunConfig
from pipeline.signature import Signature

BASE = {
    "input": {"paths": "s3://secret-bucket/corpus/*.jsonl", "storage_options": {"token": "TOKEN-123"}},
    "output": {"url": "s3://secret-bucket/runs/x"},
    "storage_options": {"key": "AKIA-XYZ", "secret": "SECRET-456", "password": "PW-789"},
}


def cfg(**sections):
    d = {**BASE}
    for k, v in sections.items():
        d[k] = v
    return RunConfig.from_dict(d)


def test_default_signature():
    import nltk

    sig = Signature.from_config(cfg())
    assert str(sig) == ("rouge:1,2,L,Lsum|tok:default|stem:no|split:newline|multiref:max_f|bs:poisson-1000-buckets4096"
                        f"|ci:95|seed:12345|profile:rouge-score-0.1.2|v:{__version__}")
    stem = Signature.from_config(cfg(scoring={"use_stemmer": True}))
    assert stem.stem == f"porter-nltk{nltk.__version__}" == "porter-nltk3.10.4"
    assert str(stem).startswith("rouge:1,2,L,Lsum|tok:default|stem:porter-nltk3.10.4|")


def test_every_number_changing_setting_is_in_it():
    base = str(Signature.from_config(cfg()))
    variants = {
        "scoring": [{"rouge_types": ["rouge1", "rougeL"]}, {"use_stemmer": True}, {"tokenizer": "whitespace"},
                    {"sentence_splitter": "sentencex"}],
        "stats": [{"seed": 1}, {"n_boot": 50}, {"n_boot": 0}, {"confidence": 0.9}, {"bootstrap": "exact"}],
    }
    seen = {base}
    for section, vs in variants.items():
        for v in vs:
            s = str(Signature.from_config(cfg(**{section: v})))
            assert s not in seen, (section, v)
            seen.add(s)
    assert "bs:none" in str(Signature.from_config(cfg(stats={"n_boot": 0})))
    assert "ci:97.5" in str(Signature.from_config(cfg(stats={"confidence": 0.975})))
    # rouge-score: a non-default tokenizer makes use_stemmer a no-op
    s = Signature.from_config(cfg(scoring={"tokenizer": "whitespace", "use_stemmer": True}))
    assert (s.tok, s.stem) == ("whitespace", "no")


def test_settings_that_do_not_change_numbers_are_not_in_it():
    a = Signature.from_config(cfg())
    b = Signature.from_config(cfg(execution={"n_workers": 3, "retries": 0}, strict=True,
                                  output={"url": "/tmp/other"}))
    assert a == b


def test_no_paths_or_secrets():
    c = cfg(scoring={"use_stemmer": True})
    s = str(Signature.from_config(c)) + repr(Signature.from_config(c).to_dict())
    for leak in ("secret-bucket", "s3://", "TOKEN-123", "AKIA-XYZ", "SECRET-456", "PW-789", "/tmp", "corpus"):
        assert leak not in s


def test_to_dict_and_round_trip():
    sig = Signature.from_config(cfg())
    d = sig.to_dict()
    assert list(d) == ["rouge", "tok", "stem", "split", "multiref", "bs", "ci", "seed", "profile", "v"]
    assert d["seed"] == "12345" and d["rouge"] == "1,2,L,Lsum"
    assert Signature.from_string(str(sig)) == sig
    with pytest.raises(ValueError):
        Signature.from_string("rouge:1|path:/x")
