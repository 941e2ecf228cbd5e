"""The options of the ``rouge155`` profile and their ROUGE-1.5.5 command-line equivalents."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.scoring.family_types import MULTI_REF_ALIASES, MULTI_REF_NAMES

# the multi_ref names as ROUGE-1.5.5 users read them: its -f letters, their long names, the rest
MULTI_REF_RULES = tuple(sorted(MULTI_REF_NAMES, key=lambda r: (r not in MULTI_REF_ALIASES.values(),
                                                               r not in MULTI_REF_ALIASES)))


@dataclass(frozen=True)
class Rouge155Options:
    """Settings that change ROUGE-1.5.5's numbers.

    ========================  ====================  ==================================================
    field                     ROUGE-1.5.5           meaning
    ========================  ====================  ==================================================
    ``n``                     ``-n N``              ROUGE-1 .. ROUGE-N (1-9); 0 computes no ROUGE-N
    ``stem``                  ``-m``                WordNet exceptions + modified Porter, tokens > 3 chars
    ``stopwords``             ``-s``                remove the SMART stopwords (before stemming)
    ``length_limit_words``    ``-l N``              keep the first N raw words of every summary
    ``length_limit_bytes``    ``-b N``              keep the first N bytes of every summary
    ``rouge_l``               (``-x`` turns off)    ROUGE-L (summary-level union LCS)
    ``w_weight``              ``-w W``              ROUGE-W-W with f(k) = k**W; ``None``: no ROUGE-W
    ``skip_gap``              ``-2 D``              ROUGE-S with max gap D (< 0: unlimited); ``None``: none
    ``su``                    ``-u``                with ``skip_gap``: ROUGE-SU (adds unigrams)
    ``alpha``                 ``-p A``              F = PR / ((1-A) P + A R)
    ``multi_ref``             ``-f A|B``            A (``pooled``): pool over references; B (``best_recall``):
                                                    best-recall reference; not in ROUGE-1.5.5: ``max_f``
                                                    (rouge-score's rule) and ``mean`` over references,
                                                    both of the per-reference printed values
    ``counting_unit``         ``-t 0|1``            corpus average of per-pair scores (0) or of pooled counts (1)
    ``resamples``             ``-r B``              bootstrap resamples
    ``confidence``            ``-c C``              confidence level of the interval, in percent
    ========================  ====================  ==================================================

    The defaults are the option set of ``rouge155_goldens.jsonl``:
    ``-n 2 -2 4 -u -w 1.2 -c 95 -r 1000 -p 0.5 -t 0 -f A`` (add ``stem=True`` for ``-m``).
    """

    n: int = 2
    stem: bool = False
    stopwords: bool = False
    length_limit_words: int | None = None
    length_limit_bytes: int | None = None
    rouge_l: bool = True
    w_weight: float | None = 1.2
    skip_gap: int | None = 4
    su: bool = True
    alpha: float = 0.5
    multi_ref: str = "A"
    counting_unit: int = 0
    resamples: int = 1000
    confidence: float = 95

    def __post_init__(self):
        if not 0 <= self.n <= 9:
            raise ValueError("n must be in 0..9")
        if self.length_limit_words and self.length_limit_bytes:
            raise ValueError("length_limit_words (-l) and length_limit_bytes (-b) are mutually exclusive")
        if self.w_weight is not None and not self.w_weight > 0:
            raise ValueError("w_weight must be > 0")
        if not 0 <= self.alpha <= 1:
            raise ValueError("alpha must be in [0, 1]")
        if self.multi_ref not in MULTI_REF_RULES:
            raise ValueError(f"multi_ref must be one of {', '.join(MULTI_REF_RULES)}, got {self.multi_ref!r}")
        object.__setattr__(self, "multi_ref", MULTI_REF_ALIASES.get(self.multi_ref, self.multi_ref))
        if self.counting_unit not in (0, 1):
            raise ValueError("counting_unit must be 0 or 1 (-t 2 prints raw counts only)")
        if not 0 <= self.confidence <= 100:
            raise ValueError("confidence must be in [0, 100]")

    @property
    def metric_names(self) -> list[str]:
        """Metric names in ROUGE-1.5.5's output order: N, L, W, S/SU."""
        names = [f"ROUGE-{k}" for k in range(1, self.n + 1)]
        if self.rouge_l:
            names.append("ROUGE-L")
        if self.w_weight is not None:
            names.append(w_metric_name(self.w_weight))
        if self.skip_gap is not None:
            names.append(s_metric_name(self.skip_gap, self.su))
        return names


def w_metric_name(weight: float) -> str:
    """``ROUGE-W-1.2`` (Perl's default number formatting, %.15g)."""
    return f"ROUGE-W-{weight:.15g}"


def s_metric_name(gap: int, su: bool) -> str:
    """``ROUGE-S4``, ``ROUGE-SU4``, ``ROUGE-S*`` (unlimited gap), ``ROUGE-SU*``."""
    return ("ROUGE-SU" if su else "ROUGE-S") + ("*" if gap < 0 else str(gap))
