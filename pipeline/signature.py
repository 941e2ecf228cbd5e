"""A sacrebleu-style signature of every setting that changes a number.

    rouge:1,2,L,Lsum|tok:default|stem:porter-nltk3.10.4|split:newline|multiref:max_f|bs:poisson-1000|ci:95|seed:12345|profile:rouge-score-0.1.2|v:0.1.0

* ``rouge``: the ROUGE types, in the configured order, without the ``rouge`` prefix.
* ``tok``: the tokenizer.  ``stem``: ``porter-nltk<version>`` when stemming is in effect,
  ``no`` otherwise.  As in rouge-score, a non-default tokenizer makes ``use_stemmer`` a
  no-op, so the signature says ``stem:no`` then.
* ``split``: the sentence splitter used for rougeLsum (recorded even without rougeLsum).
* ``multiref``: the multi-reference rule.  ``bs``: ``<bootstrap>-<n_boot>`` or ``none``.
  ``ci``: the confidence level in percent.  ``seed``: the bootstrap seed.
* ``profile``: whose numbers are reproduced.  ``v``: the pipeline version.
* With ``profile:unicode`` (issue #8), ``tok`` is the tokenizer's name, which records the
  language, the CJK method (with segmenter versions) and the Unicode data versions
  (``unicode(de)-nfkc-casefold-words+cjkchars-ucd14.0.0-regex2026.11.19``), and ``stem`` is
  ``snowball-<algorithm>-snowballstemmer<version>`` or ``no``.  A sentencex splitter for a
  language other than English is recorded as ``split:sentencex(<language>)``.

It never contains paths, URLs, storage options or credentials: it is built from an
explicit list of fields only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.scoring.types import parse_rouge_types

_FIELDS = ("rouge", "tok", "stem", "split", "multiref", "bs", "ci", "seed", "profile", "v")


def _nltk_version() -> str:
    try:
        from importlib.metadata import version

        return version("nltk")
    except Exception:  # noqa: BLE001
        return "unknown"


def _percent(confidence: float) -> str:
    return f"{round(confidence * 100, 6):g}"


@dataclass(frozen=True)
class Signature:
    rouge: str
    tok: str
    stem: str
    split: str
    multiref: str
    bs: str
    ci: str
    seed: str
    profile: str
    v: str

    @classmethod
    def from_config(cls, cfg) -> "Signature":
        """From a :class:`pipeline.config.RunConfig` (or anything with ``scoring`` and ``stats``)."""
        from pipeline import __version__

        sc, st = cfg.scoring, cfg.stats
        types = parse_rouge_types(sc.rouge_types)
        rouge = ",".join(t.name[len("rouge"):] for t in types)
        stemming = sc.use_stemmer and sc.tokenizer == "default"
        stem = f"porter-nltk{_nltk_version()}" if stemming else "no"
        bs = f"{st.bootstrap}-{st.n_boot}" if st.n_boot > 0 else "none"
        tok, split, lang = sc.tokenizer, sc.sentence_splitter, getattr(sc, "language", "en")
        if sc.profile == "unicode":
            from pipeline.text.profiles import signature_parts

            tok, stem = signature_parts(sc.profile, lang, sc.stemming, sc.cjk)
        if split == "sentencex" and lang != "en":
            split = f"sentencex({lang})"
        return cls(rouge=rouge, tok=tok, stem=stem, split=split,
                   multiref=sc.multi_ref, bs=bs, ci=_percent(st.confidence), seed=str(st.seed),
                   profile=sc.profile, v=__version__)

    @classmethod
    def from_string(cls, text: str) -> "Signature":
        """Parse ``str(sig)`` back (e.g. from a Parquet footer)."""
        items = {}
        for part in text.strip().split("|"):
            key, sep, value = part.partition(":")
            if not sep or key not in _FIELDS:
                raise ValueError(f"not a signature field: {part!r}")
            items[key] = value
        missing = [f for f in _FIELDS if f not in items]
        if missing:
            raise ValueError(f"signature misses {', '.join(missing)}")
        return cls(**items)

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in _FIELDS}

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self.to_dict().items())
