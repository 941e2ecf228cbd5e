"""A sacrebleu-style signature of every setting that changes a number.

    rouge:1,2,L,Lsum|tok:default|stem:porter-nltk3.10.4|split:newline|multiref:max_f|bs:poisson-1000-buckets4096|ci:95|seed:12345|profile:rouge-score-0.1.2|v:0.1.0

* ``rouge``: the ROUGE types, in the configured order, without the ``rouge`` prefix.
* ``tok``: the tokenizer.  ``stem``: ``porter-nltk<version>`` when stemming is in effect,
  ``no`` otherwise.  As in rouge-score, a non-default tokenizer makes ``use_stemmer`` a
  no-op, so the signature says ``stem:no`` then.
* ``split``: the sentence splitter used for rougeLsum (recorded even without rougeLsum).
* ``multiref``: the multi-reference rule.  ``bs``: ``<bootstrap>-<n_boot>-buckets<K>`` (``K``:
  the bucketed Poisson bootstrap's bucket count, whose interval ``stats.parquet`` holds in both
  modes) or ``none``.
  ``ci``: the confidence level in percent.  ``seed``: the bootstrap seed.
* ``profile``: whose numbers are reproduced.  ``v``: the pipeline version.
* With ``profile:unicode`` (issue #8), ``tok`` is the tokenizer's name, which records the
  language, the CJK method (with segmenter versions) and the Unicode data versions
  (``unicode(de)-nfkc-casefold-words+cjkchars-ucd14.0.0-regex2026.11.19``), and ``stem`` is
  ``snowball-<algorithm>-snowballstemmer<version>`` or ``no``.  A sentencex splitter for a
  language other than English is recorded as ``split:sentencex(<language>)``.

* The ROUGE family (#6): ``rouge`` lists ``W-1.2``, ``S4``, ``SU4``, ``S*`` like any type;
  ``multiref`` is ``max_f``, ``pooled``/``A``, ``best_recall``/``B`` or ``mean``; ``alpha:<a>`` is
  appended when alpha is not 0.5.  With ``profile:rouge155-1.5.5`` (ROUGE-1.5.5's numbers),
  ``tok`` is ``rouge155``, ``stem`` is ``rouge155-porter+wordnet2.0exc`` (``-m``) or ``no``, and
  ``opts:<the equivalent ROUGE-1.5.5 options>`` is appended (``-n 2 -m -s -l 100 -w 1.2 -2 4 -u
  -f A -p 0.5``).

It never contains paths, URLs, storage options or credentials: it is built from an
explicit list of fields only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline import __version__, profiles
from pipeline.scoring.family_types import parse_family_types

_FIELDS = ("rouge", "tok", "stem", "split", "multiref", "bs", "ci", "seed", "profile", "v")
_OPTIONAL = ("alpha", "opts")  # present only when set (#6)


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
    alpha: str = ""
    opts: str = ""

    @classmethod
    def from_config(cls, cfg) -> "Signature":
        """From a :class:`pipeline.config.RunConfig` (or anything with ``scoring`` and ``stats``)."""
        sc, st = cfg.scoring, cfg.stats
        types = parse_family_types(sc.rouge_types)
        rouge = ",".join(t.name[len("rouge"):] for t in types)
        alpha = getattr(sc, "alpha", 0.5)
        extra = {"alpha": f"{alpha:g}" if alpha != 0.5 else ""}
        stemming = sc.use_stemmer and sc.tokenizer == "default"
        stem = f"porter-nltk{_nltk_version()}" if stemming else "no"
        bs = f"{st.bootstrap}-{st.n_boot}" if st.n_boot > 0 else "none"
        if st.n_boot > 0:  # stats.parquet's interval (``exact`` adds rouge-score's beside it)
            from pipeline.stats.accumulator import BOOT_BUCKETS  # loads numba: not for a signature without it

            bs += f"-buckets{BOOT_BUCKETS}"
        split, lang = sc.sentence_splitter, getattr(sc, "language", "en")
        if split == "sentencex" and lang != "en":
            split = f"sentencex({lang})"
        # the profile's own fields (pipeline.profiles): tok, stem, profile and any opts
        parts = {"tok": sc.tokenizer, "stem": stem, **profiles.get(sc.profile).signature_parts(sc)}
        extra["opts"] = parts.pop("opts", "")
        return cls(rouge=rouge, split=split, multiref=sc.multi_ref or "max_f", bs=bs, ci=_percent(st.confidence),
                   seed=str(st.seed), v=__version__, **parts, **extra)

    @classmethod
    def from_string(cls, text: str) -> "Signature":
        """Parse ``str(sig)`` back (e.g. from a Parquet footer)."""
        items = {}
        for part in text.strip().split("|"):
            key, sep, value = part.partition(":")
            if not sep or key not in _FIELDS + _OPTIONAL:
                raise ValueError(f"not a signature field: {part!r}")
            items[key] = value
        missing = [f for f in _FIELDS if f not in items]
        if missing:
            raise ValueError(f"signature misses {', '.join(missing)}")
        return cls(**items)

    def to_dict(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in _FIELDS}
        out.update({f: getattr(self, f) for f in _OPTIONAL if getattr(self, f)})
        return out

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self.to_dict().items())
