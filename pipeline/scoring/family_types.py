"""The ROUGE family's type names (``scoring.rouge_types`` in every profile) and metric specs.

No NumPy or numba here: validating settings reads this grammar; the kernels
(:mod:`pipeline.rouge155.kernels`) take their metric kinds from it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipeline.scoring.types import match_type_name

KIND_N, KIND_L, KIND_LWHOLE, KIND_W, KIND_S = 0, 1, 2, 3, 4


@dataclass
class MetricSpec:
    """One metric for the kernels (see :mod:`pipeline.rouge155.kernels`)."""

    name: str
    kind: int
    n: int = 0
    weight: float = 0.0
    gap: int = 0
    su: bool = False


# scoring.multi_ref: rouge-score's max-F; ROUGE-1.5.5's -f A (pooled) and -f B (best_recall); the
# mean over references
MULTI_REF_NAMES = ("max_f", "pooled", "A", "best_recall", "B", "mean")
# the long names of ROUGE-1.5.5's -f letters
MULTI_REF_ALIASES = {"pooled": "A", "best_recall": "B"}


def parse_family_type(name: str) -> MetricSpec:
    """A type name -> :class:`MetricSpec` (``kind`` for the rouge-score profile)."""
    m = match_type_name(name)
    if m is None or m["n"] == "0":  # the shared pattern takes rouge0 (rouge-score refuses it apart)
        raise ValueError(f"Invalid rouge type: {name} (rouge1..rouge9, rougeL, rougeLsum, "
                         "rougeW-<weight>, rougeS<gap>, rougeSU<gap>, rougeS*, rougeSU*)")
    if m["n"]:
        return MetricSpec(name, KIND_N, n=int(m["n"]))
    if m["lsum"]:
        return MetricSpec(name, KIND_L)
    if m["l"]:
        return MetricSpec(name, KIND_LWHOLE)
    if m["w"]:
        w = float(m["w"])
        if not (w > 0 and math.isfinite(w)):
            raise ValueError(f"Invalid rouge type: {name!r} (the weight must be > 0)")
        return MetricSpec(name, KIND_W, weight=w)
    gap = -1 if m["gap"] == "*" else int(m["gap"])
    return MetricSpec(name, KIND_S, gap=gap, su=m["s"] == "SU")


def parse_family_types(names) -> list[MetricSpec]:
    out = [parse_family_type(n) for n in names]
    if not out:
        raise ValueError("at least one rouge type is needed")
    return out


def is_extended(names) -> bool:
    """True when some type is not one of rouge-score's (ROUGE-W or ROUGE-S/SU)."""
    return any(parse_family_type(n).kind in (KIND_W, KIND_S) for n in names)


def check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha: expected a number in [0, 1], got {alpha!r}")
    return float(alpha)
