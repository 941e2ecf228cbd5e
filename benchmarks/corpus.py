"""Deterministic benchmark corpus: pseudo-English, Zipfian, noisy, no downloads.

The corpus imitates the one described in the performance notes (which sampled
``wordfreq``'s top 30k English words), without any word list: a vocabulary of
about 30,000 pseudo-English word types is built from syllables with a seeded RNG,
most of them carrying a real English suffix (-s, -es, -ed, -ing, -ly, -ation,
-er, -ness, -ment, ...) so that the Porter stemmer has work to do.  Frequencies
follow Zipf's law.  Text noise: capitals, commas, ``?!;...``, numbers such as
``3.5%``/``$1,200``/``1998``, hyphenated words, ``'s`` and contractions, and some
non-ASCII (``café``, ``İstanbul``, the Kelvin sign, curly quotes, em dash).
Sentences are separated by ``"\\n"`` (what rougeLsum splits on).

Two shapes:

* ``short``: reference ~50 words in 3 sentences; candidate ~65 words in 3-4
  sentences made of copied 2-8-word reference spans (35% of the spans with one
  word's inflection changed) and novel words.  About 120 tokens a pair.
* ``long``: ~2,000 words a side in ~100 sentences; the candidate copies reference
  spans mostly in order, with occasional jumps and novel words.

Everything depends only on ``(kind, n_pairs, seed)`` and Python's ``random``
module (Mersenne Twister, stable across platforms and Python versions), so the
same call gives the same texts everywhere.  Pair ``i`` does not depend on
``n_pairs``: a 100-pair corpus is a prefix of a 5,000-pair corpus.

    python benchmarks/corpus.py --kind short --pairs 5000 --seed 0 -o short.jsonl
writes JSONL rows ``{"id", "candidate", "references": [reference]}``.
"""
from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
import sys
from functools import lru_cache

VOCAB_SIZE = 30_000
ZIPF_EXPONENT = 1.0
ZIPF_OFFSET = 2.7

# A few hundred real English function/common words take the top ranks, as in
# real text (they are plain words, not a copyrighted list).
_FUNCTION_WORDS = (
    "the of and to a in is that for it was on with as he be by at this are "
    "from or have an they which one you had not but were all we she there can "
    "been has his her their if would more will so what when who no out up into "
    "than them about its only other some could time these two may then do first "
    "any my now such like our over also new after most made did many where before "
    "through back years much should well people down way just because those very "
    "how even state world still between both under never same last long while "
    "might great old year off come since against again place around however home "
    "small found without another large each part high three went own every here"
).split()

_ONSETS = ("b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sc "
           "sh sk sl sm sn sp st str t th tr v w wh y z").split()
_VOWELS = "a e i o u a e i o ea ai ou oo ie".split()
_CODAS = ("", "", "", "n", "r", "l", "m", "t", "d", "s", "st", "nd", "nt", "rk",
          "ck", "ng", "sh", "rt", "ld", "mp", "x", "p", "v", "g")
# suffix -> weight; "" is the bare stem
_SUFFIXES = {"": 30, "s": 14, "es": 3, "ed": 10, "ing": 10, "ly": 6, "ation": 4,
             "er": 5, "ers": 3, "ness": 2, "ment": 2, "ments": 1, "ful": 1,
             "ity": 2, "ize": 1, "ized": 1, "izing": 1, "ational": 1, "ive": 1,
             "ies": 1, "ied": 1, "able": 1}
_INFLECTIONS = ("", "s", "ed", "ing", "ly", "ation", "er", "es", "ment")
_NON_ASCII = ("café", "naïve", "İstanbul", "Zürich", "São", "résumé", "façade",
              "coöperate", "Ångström", "Łódź", "Dvořák", "señor", "déjà", "über",
              "\u212aelvin", "Straße", "Ærø", "crème", "jalapeño", "Göteborg")
_CONTRACTIONS = ("don't", "it's", "can't", "we'll", "they're", "isn't", "I'm",
                 "won't", "you've", "he'd", "that's", "didn't")
_END_PUNCT = (".",) * 14 + ("?", "!", ";", "...", ".\u201d", "!?")
_QUOTES = (("\u201c", "\u201d"), ("\u2018", "\u2019"), ('"', '"'), ("(", ")"))


def _join(stem: str, suffix: str) -> str:
    """English-ish orthography, so the stemmer sees realistic endings."""
    if not suffix:
        return stem
    if stem.endswith("e") and suffix[0] in "aeiouy":
        stem = stem[:-1]
    if suffix in ("ies", "ied") and stem.endswith("y"):
        stem = stem[:-1]
    if suffix in ("ies", "ied") and not stem.endswith("y"):
        suffix = suffix[1:] if stem.endswith("i") else suffix
    return stem + suffix


class Vocabulary:
    """~30k word types in Zipf rank order, each with its stem and suffix."""

    def __init__(self, size: int = VOCAB_SIZE, seed: int = 12345):
        rng = random.Random(seed)
        seen: set[str] = set()
        self.words: list[str] = []
        self.stem_of: list[str | None] = []  # None: not inflectable (function words)
        for w in _FUNCTION_WORDS:
            if w not in seen:
                seen.add(w)
                self.words.append(w)
                self.stem_of.append(None)
        suffixes = list(_SUFFIXES)
        weights = list(_SUFFIXES.values())
        generated: list[tuple[str, str]] = []
        while len(self.words) + len(generated) < size:
            n_syll = rng.choices((1, 2, 3, 4), (40, 42, 15, 3))[0]
            stem = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                           for _ in range(n_syll))
            if len(stem) < 3:
                continue
            # each stem appears in 1-4 inflected forms, like real English lemmas
            # sorted: set order depends on the per-process string hash seed
            for suf in sorted(set(rng.choices(suffixes, weights, k=rng.choice((1, 1, 2, 2, 3, 4))))):
                w = _join(stem, suf)
                if w not in seen:
                    seen.add(w)
                    generated.append((w, stem))
        # Shorter words are more frequent (Zipf's law of abbreviation); the noise
        # spreads the forms of one stem over unrelated ranks.
        keyed = [(len(w) + rng.gauss(0, 2.5), w, stem) for w, stem in generated]
        keyed.sort()
        generated = [(w, stem) for _, w, stem in keyed]
        for w, stem in generated[: size - len(self.words)]:
            self.words.append(w)
            self.stem_of.append(stem)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.cum_weights = list(itertools.accumulate(
            1.0 / (r + ZIPF_OFFSET) ** ZIPF_EXPONENT for r in range(len(self.words))))

    def sample(self, rng: random.Random, k: int) -> list[int]:
        total = self.cum_weights[-1]
        cw = self.cum_weights
        hi = len(cw) - 1
        return [min(bisect.bisect(cw, rng.random() * total), hi) for _ in range(k)]


@lru_cache(maxsize=4)
def vocabulary(size: int = VOCAB_SIZE) -> Vocabulary:
    return Vocabulary(size)


# A "word" below is a surface string without sentence punctuation; copying and
# inflection changes work on these, punctuation/capitals are added at rendering.

def _number(rng: random.Random) -> str:
    k = rng.randrange(7)
    if k == 0:
        return f"{rng.randrange(1, 100)}.{rng.randrange(10)}%"
    if k == 1:
        return f"${rng.randrange(1, 10)},{rng.randrange(1000):03d}"
    if k == 2:
        return str(rng.randrange(1900, 2030))
    if k == 3:
        return f"{rng.randrange(1, 1000)}"
    if k == 4:
        return f"{rng.randrange(2, 60)}-year-old"
    if k == 5:
        return f"${rng.randrange(1, 100)}.{rng.randrange(100):02d}"
    return f"{rng.randrange(1, 13)}:{rng.randrange(60):02d}"


def _words(rng: random.Random, vocab: Vocabulary, k: int) -> list[str]:
    out = []
    for wid in vocab.sample(rng, k):
        w = vocab.words[wid]
        x = rng.random()
        if x < 0.025:
            w = _number(rng)
        elif x < 0.045:
            w = w + "-" + vocab.words[vocab.sample(rng, 1)[0]]
        elif x < 0.060:
            w = w + rng.choice(("'s", "\u2019s"))
        elif x < 0.072:
            w = rng.choice(_CONTRACTIONS)
        elif x < 0.080:
            w = rng.choice(_NON_ASCII)
        elif x < 0.110:
            w = w.capitalize()  # proper-noun-like
        elif x < 0.113:
            w = w.upper()
        out.append(w)
    return out


def _inflect(rng: random.Random, vocab: Vocabulary, word: str) -> str:
    """Change one word's inflection (same stem, other suffix); keeps the case."""
    wid = vocab.index.get(word.lower())
    if wid is None:
        return word
    stem = vocab.stem_of[wid]
    if stem is None:
        return word
    for _ in range(4):
        new = _join(stem, rng.choice(_INFLECTIONS))
        if new != word.lower():
            return new.capitalize() if word[:1].isupper() else new
    return word


def _render(rng: random.Random, sentences: list[list[str]]) -> str:
    lines = []
    for sent in sentences:
        if not sent:
            continue
        parts = []
        n = len(sent)
        for i, w in enumerate(sent):
            if i == 0:
                w = w[:1].upper() + w[1:]
            if i < n - 1:
                x = rng.random()
                if x < 0.07:
                    w += ","
                elif x < 0.080:
                    w += " \u2014"
                elif x < 0.085:
                    w += ";"
                elif x < 0.088:
                    w += ":"
            parts.append(w)
        if n >= 4 and rng.random() < 0.06:
            i = rng.randrange(n - 2)
            j = min(n - 1, i + rng.randrange(1, 4))
            q0, q1 = rng.choice(_QUOTES)
            parts[i] = q0 + parts[i]
            parts[j] = parts[j] + q1
        lines.append(" ".join(parts) + rng.choice(_END_PUNCT))
    return "\n".join(lines)


def _split_sentences(rng: random.Random, words: list[str], n_sents: int) -> list[list[str]]:
    n = len(words)
    if n_sents <= 1 or n < 2:
        return [words]
    cuts = sorted(rng.sample(range(1, n), min(n_sents - 1, n - 1)))
    out, prev = [], 0
    for c in cuts + [n]:
        out.append(words[prev:c])
        prev = c
    return out


def _reference(rng, vocab, n_words: int, n_sents: int) -> list[list[str]]:
    sents = []
    for s in range(n_sents):
        left = n_words - sum(map(len, sents))
        if s == n_sents - 1:
            k = left
        else:
            mean = left / (n_sents - s)
            k = max(3, int(rng.gauss(mean, mean * 0.3)))
        sents.append(_words(rng, vocab, max(k, 1)))
    return sents


def _candidate_words(rng, vocab, ref_flat: list[str], target: int, in_order: bool,
                     p_copy: float, p_jump: float) -> list[str]:
    out: list[str] = []
    pos = 0
    n = len(ref_flat)
    while len(out) < target:
        if rng.random() < p_copy:
            span = rng.randint(2, 8)
            if in_order:
                if rng.random() < p_jump or pos >= n - 2:
                    pos = rng.randrange(max(n - 2, 1))
                start = pos
            else:
                start = rng.randrange(max(n - span + 1, 1))
            words = ref_flat[start:start + span]
            pos = start + len(words) + (rng.randrange(4) if in_order else 0)
            if words and rng.random() < 0.35:
                i = rng.randrange(len(words))
                words = list(words)
                words[i] = _inflect(rng, vocab, words[i])
            out.extend(words)
        else:
            out.extend(_words(rng, vocab, rng.randint(1, 6)))
    return out[:target]


def make_pair(kind: str, index: int, seed: int = 0) -> tuple[str, str]:
    """The ``index``-th (reference, candidate) pair of a corpus."""
    vocab = vocabulary()
    rng = random.Random(f"rouge-pipeline-bench/{kind}/{seed}/{index}")
    if kind == "short":
        ref_sents = _reference(rng, vocab, max(20, int(rng.gauss(50, 6))), 3)
        ref_flat = [w for s in ref_sents for w in s]
        cand = _candidate_words(rng, vocab, ref_flat, max(25, int(rng.gauss(65, 8))),
                                in_order=False, p_copy=0.62, p_jump=0.0)
        cand_sents = _split_sentences(rng, cand, rng.choice((3, 4)))
    elif kind == "long":
        n_sents = max(60, int(rng.gauss(100, 8)))
        ref_sents = _reference(rng, vocab, max(1200, int(rng.gauss(2000, 150))), n_sents)
        ref_flat = [w for s in ref_sents for w in s]
        cand = _candidate_words(rng, vocab, ref_flat, max(1200, int(rng.gauss(2000, 150))),
                                in_order=True, p_copy=0.72, p_jump=0.08)
        cand_sents = _split_sentences(rng, cand, max(60, int(rng.gauss(100, 8))))
    else:
        raise ValueError(f"unknown corpus kind {kind!r} (short or long)")
    return _render(rng, ref_sents), _render(rng, cand_sents)


def make_corpus(kind: str, n_pairs: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``(references, candidates)``, both ``n_pairs`` long, deterministic in all arguments."""
    refs, cands = [], []
    for i in range(n_pairs):
        r, c = make_pair(kind, i, seed)
        refs.append(r)
        cands.append(c)
    return refs, cands


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=("short", "long"), default="short")
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", default="-", help="JSONL path, '-' for stdout")
    ap.add_argument("--stats", action="store_true", help="print corpus statistics to stderr")
    args = ap.parse_args(argv)
    refs, cands = make_corpus(args.kind, args.pairs, args.seed)
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        for i, (r, c) in enumerate(zip(refs, cands)):
            out.write(json.dumps({"id": f"{args.kind}-{args.seed}-{i:06d}", "candidate": c,
                                  "references": [r]}, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if args.stats:
        import re
        tok = re.compile(r"[a-z0-9]+")
        n_tok = sum(len(tok.findall(t.lower())) for t in refs + cands)
        chars = sum(map(len, refs + cands))
        types = {w for t in refs + cands for w in tok.findall(t.lower())}
        print(f"{args.pairs} {args.kind} pairs: {chars / args.pairs:.0f} chars/pair, "
              f"{n_tok / args.pairs:.1f} tokens/pair, {len(types)} token types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
