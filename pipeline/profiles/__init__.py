"""The profile registry: a run's ``scoring.profile`` by name (the sacrebleu pattern).

Each profile is one module of this package (a :class:`pipeline.profiles.base.Profile`) and one
line below.  Built in: ``rouge-score-0.1.2`` (the default), ``unicode``, ``rouge155``.
"""
from __future__ import annotations

from pipeline.profiles import rouge155, rouge_score, unicode
from pipeline.profiles.base import Profile

DEFAULT = rouge_score.PROFILE.name
REGISTRY: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    """Add ``profile`` under its name (a name already taken is refused)."""
    if not profile.name or profile.name in REGISTRY:
        raise ValueError(f"profile: the name {profile.name!r} is empty or taken")
    REGISTRY[profile.name] = profile
    return profile


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> Profile:
    """The profile called ``name``; ValueError listing the names otherwise."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"profile: expected one of {', '.join(REGISTRY)}, got {name!r}") from None


def default_multi_ref(name: str) -> str:
    """``scoring.multi_ref`` when not set: the profile's own (an unknown name: rouge-score's)."""
    p = REGISTRY.get(name) if isinstance(name, str) else None
    return (p or REGISTRY[DEFAULT]).default_multi_ref


register(rouge_score.PROFILE)
register(unicode.PROFILE)
register(rouge155.PROFILE)
