"""``rouge155``: ROUGE-1.5.5's numbers (Chin-Yew Lin's Perl script, rounded as it prints them).

Its own tokenizer (``use_stemmer`` is ``-m``: Porter plus WordNet 2.0's exceptions), one sentence
a line, ``remove_stopwords``/``length_limit_words``/``length_limit_bytes`` for ``-s``/``-l``/``-b``,
pooled references (``-f A``) unless ``multi_ref`` says otherwise.  The signature records the
equivalent ROUGE-1.5.5 options; a finished run also gets ``rouge155_corpus.json``, the script's
printed averages with its own bootstrap intervals.
"""
from __future__ import annotations

from pipeline.checks import ConfigError
from pipeline.profiles.base import TEXT_OPTION_DEFAULTS, Profile

SIGNATURE_NAME = "rouge155-1.5.5"


def _options(s):
    from pipeline.rouge155.family import options_for_types  # loads the kernels: only for this profile (cold start)

    return options_for_types(list(s.rouge_types), s.use_stemmer, s.remove_stopwords, s.length_limit_words,
                             s.length_limit_bytes, s.alpha, s.multi_ref)


class Rouge155Profile(Profile):
    name = "rouge155"
    default_multi_ref = "A"
    # runfolder.names.ROUGE155_CORPUS, a run-format file (not imported: config checks stay free of Arrow)
    outputs = ("rouge155_corpus.json",)

    def check(self, s) -> None:
        if s.tokenizer != "default":
            raise ConfigError(f"scoring.tokenizer: {s.tokenizer!r} cannot be combined with profile 'rouge155'")
        if s.sentence_splitter != "newline":
            raise ConfigError("scoring.sentence_splitter: profile 'rouge155' reads one sentence per line (newline)")
        for name, default in TEXT_OPTION_DEFAULTS.items():
            if getattr(s, name) != default:
                raise ConfigError(f"scoring.{name}: not used by profile 'rouge155' (English, -m with use_stemmer)")
        if s.length_limit_words and s.length_limit_bytes:
            raise ConfigError("scoring.length_limit_words/length_limit_bytes: -l and -b are mutually exclusive")
        try:
            _options(s)
        except ValueError as e:
            raise ConfigError(f"scoring.rouge_types: {e}") from None

    def build_scorer(self, s, tokenizer=None):
        if tokenizer is not None:
            raise ValueError(f"tokenizer: a custom tokenizer cannot be combined with profile {self.name!r}")
        from pipeline.rouge155.family import PipelineRouge155Scorer  # as _options

        return PipelineRouge155Scorer.create(
            list(s.rouge_types), stem=s.use_stemmer, remove_stopwords=s.remove_stopwords,
            length_limit_words=s.length_limit_words, length_limit_bytes=s.length_limit_bytes,
            alpha=s.alpha, multi_ref=s.multi_ref)

    def signature_parts(self, s) -> dict[str, str]:
        from pipeline.rouge155.family import perl_options  # as _options

        opts, _ = _options(s)
        return {"tok": "rouge155", "stem": "rouge155-porter+wordnet2.0exc" if s.use_stemmer else "no",
                "profile": SIGNATURE_NAME, "opts": perl_options(opts)}

    def extra_outputs(self, systems, s, stats, read_scores) -> dict:
        from pipeline.rouge155.family import corpus_outputs  # as _options

        return {self.outputs[0]: corpus_outputs(systems, s, stats.n_boot, stats.confidence, read_scores)}


PROFILE = Rouge155Profile()
