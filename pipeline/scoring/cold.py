"""The cold-start tier: a process's first small batches, scored in pure Python.

Before the compiled path scores its first pair, a fresh process imports NumPy and numba and
loads the cached kernels, which initialises numba's typing and target registries: ~0.7 s on
the 2-core machine this was measured on, more than scoring a hundred short pairs takes.  Many
calls are that small (a notebook cell, a unit test, a command that scores one file), so, as
an interpreter runs code before a JIT has compiled it, a process scores its first batches
here, in pure Python, and moves to the compiled path for good once it has scored
:data:`BUDGET_CHARS` characters of text here (about what this tier scores in the time the
load takes; rougeLsum's pairs of lines are charged too), when a call costs more than what
is left of that budget or holds a text longer than :data:`MAX_TEXT_CHARS`, or as soon as
anything in the process has loaded numba.  Only :meth:`pipeline.RougeScorer.score_batch` (and so ``score`` and ``score_multi``)
with the default tokenizer and newline sentences comes here; the columnar and Arrow calls
always use the compiled path.

The numbers are the specification's (:mod:`pipeline.scoring.spec`: same tokenizer, same
formulas, same union-LCS tie-break and clipping), with its two LCS primitives replaced by
bit-parallel ones on Python ints, so no O(m*n) table is built.  Tests compare this tier with
rouge-score and with the compiled path pair by pair.  ``ROUGE_PIPELINE_COLD_START=0`` turns
the tier off.

While this machine's numba cache does not hold the scoring kernels yet (a fresh install), the
budget and the length limit do not apply: any batch of up to :data:`COMPILING_LIMIT_CHARS` is
scored here (:func:`try_score`; the columnar calls and a job's batches through
:func:`try_columns`) while one background process compiles the kernels
(:func:`pipeline.scoring.kernel_cache.start_background`); the first call after they are in
the cache moves to the compiled path.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Sequence

from pipeline.scoring import kernel_cache, spec
from pipeline.text.tokenizers import DefaultTokenizer

# The budget is in characters, plus a charge per example and per pair of lines (rougeLsum
# runs an LCS with backtracking for every reference line against every candidate line).
# Measured on the benchmark corpora: short pairs (3-4 lines a side) run at ~0.8 million
# characters/s here, pairs of ~15 lines a side at ~0.25 million, one line pair costs ~1-5 us.
# The budget is ~0.2-0.6 s of work, about what loading the compiled path costs; 100 short
# pairs are ~75,000.  A longer text goes to the compiled path (whose LCS is the one that
# scales), and so ends the tier.
BUDGET_CHARS = 150_000
MAX_TEXT_CHARS = 2_000
EXAMPLE_CHARS = 50
LINE_PAIR_CHARS = 4
# Kernels not compiled yet: a batch up to this cost is scored here (about as long as compiling
# the kernels would keep it waiting); a larger one waits for them, its wait shown.
COMPILING_LIMIT_CHARS = 10_000_000
COMPILING_MAX_TEXT_CHARS = 200_000   # longer texts: the compiled path (and its limits on rougeLsum)
_left = BUDGET_CHARS
_lock = threading.Lock()
_off = False      # a process that exists to compile (warmup, the background compile)
_ready = False    # the scoring kernels were in the cache at the last look (they stay)


def _numba_loaded() -> bool:
    return "numba" in sys.modules


def enabled() -> bool:
    return not _off and os.environ.get("ROUGE_PIPELINE_COLD_START", "1") != "0"


def kernels_ready() -> bool:
    """The scoring kernels are in this machine's numba cache (loading them costs ~1 s, not a compile)."""
    global _ready
    if not _ready:
        _ready = kernel_cache.is_ready(kernel_cache.SCORING)
    return _ready


def compiled_here() -> None:
    """This process loaded the compiled path (its kernels compiled or loaded here): the later
    batches go there too, even when no stamp could be written (a read-only cache)."""
    global _ready
    _ready = True


def compiles_here() -> bool:
    """This process exists to compile the kernels (:func:`disable`)."""
    return _off


def disable() -> None:
    """This process compiles the kernels: every batch goes to the compiled path."""
    global _off
    _off = True
    used_up()


def _columns(ref: Sequence[str], cand: Sequence[str]) -> list[int]:
    """Bit-parallel LCS (Allison-Dix / Hyyro): ``cols[j]`` has a zero at bit ``k`` where row
    ``k + 1`` of column ``j`` of the LCS table is one more than row ``k``, so
    ``LCS(ref[:i], cand[:j])`` is the number of zeros among the lowest ``i`` bits."""
    masks: dict[str, int] = {}
    for k, tok in enumerate(ref):
        masks[tok] = masks.get(tok, 0) | (1 << k)
    full = (1 << len(ref)) - 1
    v = full
    cols = [v]
    get = masks.get
    for tok in cand:
        u = v & get(tok, 0)
        v = ((v + u) | (v - u)) & full
        cols.append(v)
    return cols


def lcs_length(ref: Sequence[str], cand: Sequence[str]) -> int:
    return len(ref) - _columns(ref, cand)[-1].bit_count()


def lcs_positions(ref: Sequence[str], cand: Sequence[str]) -> list[int]:
    """:func:`pipeline.scoring.spec.lcs_positions`: the same walk, the table's entries counted
    from the bit columns."""
    cols = _columns(ref, cand)
    return spec.lcs_walk(ref, cand, lambda i, j: i - (cols[j] & ((1 << i) - 1)).bit_count())


def _examples(targets, predictions, lsum: bool, left: int, max_text: int | None = None):
    """``([(references, candidate)], cost)`` when every input is plain text (a str, or a
    non-empty list or tuple of str for several references) and the batch costs at most
    ``left``; None otherwise (the compiled path words every input error).  Gives up as soon as
    the cost passes ``left``, so a large batch is not copied only to be sent on.  ``max_text``:
    the longest text (default :data:`MAX_TEXT_CHARS`)."""
    max_text = MAX_TEXT_CHARS if max_text is None else max_text
    try:
        if len(targets) != len(predictions) or len(predictions) * EXAMPLE_CHARS > left:
            return None
    except TypeError:  # no len(): the compiled path says what it accepts
        return None
    out = []
    cost = 0
    for refs, cand in zip(targets, predictions):
        if type(cand) is not str or len(cand) > max_text:
            return None
        if type(refs) is str:
            refs = [refs]
        elif type(refs) in (list, tuple) and refs and all(type(r) is str for r in refs):
            refs = list(refs)
        else:
            return None
        cost += EXAMPLE_CHARS + len(cand)
        c_lines = cand.count("\n") + 1 if lsum else 0
        for r in refs:
            if len(r) > max_text:
                return None
            cost += len(r) + (LINE_PAIR_CHARS * c_lines * (r.count("\n") + 1) if lsum else 0)
        if cost > left:
            return None
        out.append((refs, cand))
    return out, cost


def try_score(types, use_stemmer: bool, targets, predictions) -> list[dict[str, tuple]] | None:
    """``(p, r, f)`` per type per example, or None when the batch belongs to the compiled path:
    the tier is off, its input is not plain text, or the scoring kernels are compiled and the
    tier is used up, numba is already loaded in this process (by the job, a benchmark,
    anything), or the batch costs more than what is left (which ends the budget).  Kernels not
    compiled yet: any batch up to :data:`COMPILING_LIMIT_CHARS`, their compile started."""
    if not types or not enabled():
        return None
    lsum = any(t.kind == "Lsum" for t in types)
    found = _from_budget(targets, predictions, lsum)
    if found is None:
        if kernels_ready():
            return None
        found = _examples(targets, predictions, lsum, COMPILING_LIMIT_CHARS, max_text=COMPILING_MAX_TEXT_CHARS)
        if found is None:
            return None
        kernel_cache.start_background()
    return [spec.best_by_fmeasure(per_ref) for per_ref, _, _ in _score_examples(types, use_stemmer, found[0])]


def _score_examples(types, use_stemmer: bool, examples):
    """``(per reference (p, r, f) per type, candidate tokens, [reference tokens])`` per example."""
    tok = DefaultTokenizer(use_stemmer).tokenize
    cache: dict[str, tuple[list[str], list[list[str]]]] = {}

    def encode(text: str) -> tuple[list[str], list[list[str]]]:
        hit = cache.get(text)
        if hit is None:
            # "\n" separates tokens, so the text's tokens are its lines' tokens in order
            sents = [tok(s) for s in text.split("\n") if s]
            hit = cache[text] = ([t for s in sents for t in s], sents)
        return hit

    out = []
    for refs, cand in examples:
        c, c_sents = encode(cand)
        encoded = [encode(r) for r in refs]
        per_ref = [spec.score_tokens(types, r, c, r_sents, c_sents, lcs_length, lcs_positions)
                   for r, r_sents in encoded]
        out.append((per_ref, len(c), [len(r) for r, _ in encoded]))
    return out


def try_columns(types, use_stemmer: bool, targets, predictions):
    """While the scoring kernels are not compiled (their compile started): the columns of
    :class:`pipeline.scoring.batch.BatchScores` as lists (per example the ``(p, r, f)`` per type,
    the reference kept per type (highest F, first on ties), candidate tokens, tokens of all
    references, references), or None when the batch belongs to the compiled path."""
    if not types or not enabled() or kernels_ready():
        return None
    lsum = any(t.kind == "Lsum" for t in types)
    found = _examples(targets, predictions, lsum, COMPILING_LIMIT_CHARS, max_text=COMPILING_MAX_TEXT_CHARS)
    if found is None:
        return None
    kernel_cache.start_background()
    names = [t.name for t in types]
    scores, best, cand_len, ref_len, n_refs = [], [], [], [], []
    for per_ref, c_len, r_lens in _score_examples(types, use_stemmer, found[0]):
        keep = [max(range(len(per_ref)), key=lambda i, n=n: (per_ref[i][n][2], -i)) for n in names]
        scores.append([per_ref[k][n] for k, n in zip(keep, names)])
        best.append(keep)
        cand_len.append(c_len)
        ref_len.append(sum(r_lens))
        n_refs.append(len(r_lens))
    return scores, best, cand_len, ref_len, n_refs


def _from_budget(targets, predictions, lsum: bool):
    """:func:`_examples` within the budget, spending it; a batch over it ends the budget."""
    global _left
    if _left <= 0:
        return None
    if _numba_loaded():
        used_up()
        return None
    with _lock:  # check and spend the budget in one step
        found = _examples(targets, predictions, lsum, _left)
        if found is None:
            _left = 0  # the compiled path pays off from here on
            return None
        _left -= found[1]
    return found


def used_up() -> None:
    """The compiled path is loaded: every later batch goes there."""
    global _left
    with _lock:
        _left = 0
