"""References encoded once per process (issue 30): a reference text the default encoder has seen,
in this batch or any earlier one, is taken from its cache (:mod:`pipeline.text.textcache`)
instead of being tokenized again, and every number stays rouge-score's."""
import random
from concurrent.futures import ThreadPoolExecutor
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from rouge_score import rouge_scorer

from pipeline import RougeScorer
from pipeline.columns import utf8_buffers
from pipeline.scoring import engine
from pipeline.text.csr import text_hash
from pipeline.text.encoder import DefaultEncoder
from pipeline.text.textcache import TextCache
from pipeline.text.vocabulary import Vocabulary

sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
from corpus import make_corpus  # noqa: E402
from support.scans import scanned_texts  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
_REFS, _CANDS = make_corpus("short", 10, 7)
# non-ASCII references: U+0130 and U+212A (lowercase to ASCII), accents, CJK, an emoji, an empty text
REFS = _REFS + ["Caf\u00e9 na\u00efve \u0130stanbul \u212aelvin r\u00e9sum\u00e9 running runs\nsecond line",
                "\u65e5\u672c\u8a9e text and more text \U0001f600 words", ""]
N_DOCS = len(REFS)


def _fresh(text: str) -> str:
    return text.encode().decode()  # an equal str that is another object, as rows read from a file


def _system(s: int, multi: bool):
    """System ``s``'s rows: every document's references (new objects) and its own candidate;
    ``multi``: two or three references a document (a repeat within one example included)."""
    rng = random.Random(s)
    cands, refs = [], []
    for d in range(N_DOCS):
        words = (_CANDS[d % len(_CANDS)] + " caf\u00e9 \u0130s").split(" ")
        cands.append(" ".join(w for w in words if rng.random() > 0.2))
        if multi:
            refs.append([_fresh(REFS[d]), _fresh(REFS[(d + 1) % N_DOCS])] + ([_fresh(REFS[d])] if d % 3 == 0 else []))
        else:
            refs.append(_fresh(REFS[d]))
    return refs, cands


@pytest.fixture(autouse=True)
def _every_call_through_the_cache(monkeypatch):
    """These tests are about the reference cache: every call goes through it, however few and short
    its references (such a call skips it otherwise: ``DefaultEncoder.FEW_UNITS``)."""
    monkeypatch.setattr(DefaultEncoder, "FEW_REFERENCES", -1)


@pytest.fixture
def encoders(monkeypatch):
    """Fresh per-process encoders (empty vocabularies and caches) for this test."""
    monkeypatch.setattr(engine, "_ENCODERS", {})
    return engine._ENCODERS


def _score(scorer, path, refs, cands):
    if path == "arrow":
        return scorer.score_arrow(pa.array(refs), pa.array(cands)).scores
    return scorer.score_arrays(refs, cands).scores


_ORACLE: dict = {}


def _expected(stem, refs, cands):
    """rouge-score's numbers, (n, types, 3)."""
    oracle = rouge_scorer.RougeScorer(TYPES, use_stemmer=stem)
    out = []
    for r, c in zip(refs, cands):
        key = (stem, tuple(r) if isinstance(r, list) else r, c)
        if key not in _ORACLE:
            got = oracle.score(r, c) if isinstance(r, str) else oracle.score_multi(r, c)
            _ORACLE[key] = [list(got[t]) for t in TYPES]
        out.append(_ORACLE[key])
    return out


@pytest.mark.parametrize("multi", [False, True], ids=["single", "multi"])
@pytest.mark.parametrize("path", ["lists", "arrow"])
@pytest.mark.parametrize("stem", [True, False], ids=["stemmed", "unstemmed"])
def test_references_across_calls_and_batches_equal_rouge_score(stem, path, multi, encoders, monkeypatch):
    """Four systems against the same references: system 0 alone, systems 1 and 2 in one call
    (repeats within a batch and hits of the first call), system 3 in two calls; then system 0
    again.  Every number equals rouge-score's and the run of a cache that keeps nothing."""
    scorer = RougeScorer(TYPES, use_stemmer=stem)
    systems = [_system(s, multi) for s in range(4)]
    calls = [systems[0], (systems[1][0] + systems[2][0], systems[1][1] + systems[2][1]),
             (systems[3][0][:5], systems[3][1][:5]), (systems[3][0][5:], systems[3][1][5:]), _system(0, multi)]
    got = [_score(scorer, path, refs, cands) for refs, cands in calls]
    assert engine.default_encoder(stem).cache.n_entries == N_DOCS  # each distinct text kept once
    engine._ENCODERS.clear()
    monkeypatch.setattr(TextCache, "MAX_BYTES", 0)  # a cache that keeps nothing
    uncached = [_score(scorer, path, refs, cands) for refs, cands in calls]
    assert engine.default_encoder(stem).cache.n_entries == 0
    for (refs, cands), g, u in zip(calls, got, uncached):
        assert g.tolist() == _expected(stem, refs, cands)
        assert g.tolist() == u.tolist()


@pytest.mark.parametrize("path", ["lists", "arrow", "task"])
def test_the_second_system_does_not_tokenize_its_references_again(path, encoders, monkeypatch):
    """Through lists, Arrow columns or a job task's table, one call per system: system 0's
    references are scanned and kept, system 1's call scans its candidates alone, and system 2's
    its candidates and the one reference no system had before.  The cache holds the stemmed ids."""
    from pipeline import job

    seen = scanned_texts(monkeypatch)
    scorer = RougeScorer(TYPES, use_stemmer=True)
    settings = job.ScoringSettings(rouge_types=TYPES, use_stemmer=True, diagnostics=False)

    def run(refs, cands):
        if path == "task":
            table = pa.table({"id": [f"d{i}" for i in range(len(refs))], "system": ["s"] * len(refs),
                              "candidate": cands, "references": [[r] for r in refs], "source": [None] * len(refs)})
            return job.score_matrix(job.score_table(table, settings), TYPES)
        return _score(scorer, "arrow" if path == "arrow" else "lists", refs, cands)

    refs0, cands0 = _system(0, False)
    got = run(refs0, cands0)
    # the candidates, then the references (Python lists of new texts: one scan, in the batch layout)
    assert sorted(seen) == ([2 * N_DOCS] if path == "lists" else [N_DOCS, N_DOCS])
    cache = engine.default_encoder(True).cache
    assert cache.n_entries == N_DOCS
    assert np.asarray(got).tolist() == _expected(True, refs0, cands0)
    alone = engine.default_encoder(True)._finish(*engine.default_encoder(True)._encode_strs(REFS))
    assert cache.tokens[:cache.doc_tok[N_DOCS]].tolist() == alone.tokens.tolist()  # stemmed, as scored
    seen.clear()
    refs1, cands1 = _system(1, False)
    got = run(refs1, cands1)
    assert sorted(seen) == [N_DOCS]                   # the candidates alone
    assert np.asarray(got).tolist() == _expected(True, refs1, cands1)
    seen.clear()
    refs2, cands2 = _system(2, False)
    refs2[4] = "a reference no system had before"
    got = run(refs2, cands2)
    assert sorted(seen) == [1, N_DOCS]                # the candidates and the one new reference
    assert np.asarray(got).tolist() == _expected(True, refs2, cands2)
    assert cache.n_entries == N_DOCS + 1


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_past_the_first_sight_budget_references_seen_once_are_not_kept(path, encoders, monkeypatch):
    """Once the cache holds FIRST_SIGHT_BYTES (here from the start), texts seen once leave only
    the hash of their bytes; the set of hashes is emptied when half full; seen again, they are kept."""
    monkeypatch.setattr(TextCache, "MAX_SEEN", 1 << 12)
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", 0)
    scorer = RougeScorer(TYPES)
    refs, cands = make_corpus("short", 3000, 5)
    sizes = []
    for a in range(0, 3000, 500):
        _score(scorer, path, refs[a:a + 500], cands[a:a + 500])
        cache = engine.default_encoder(False).cache
        assert cache.n_entries == 0 and cache.seen.shape[0] <= 1 << 12
        sizes.append(cache._n_seen)
    assert sizes[:4] == [500, 1000, 1500, 2000] and sizes[4] == 500   # emptied
    again = _score(scorer, path, refs[2500:], cands[2500:])             # seen before: now kept
    assert engine.default_encoder(False).cache.n_entries == 500
    assert again[:20].tolist() == _expected(False, refs[2500:2520], cands[2500:2520])


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_references_are_kept_at_first_sight_until_the_budget(path, encoders, monkeypatch):
    """Texts are kept at first sight, in order, while the kept texts' bytes stay within
    FIRST_SIGHT_BYTES; the others are only hashed, and kept when seen again."""
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", 50_000)
    scorer = RougeScorer(TYPES)
    refs, cands = make_corpus("short", 1500, 9)
    sizes = np.array([len(r.encode()) for r in refs[:1000]])
    first = int((np.cumsum(sizes[:500]) <= 50_000).sum())
    more = int((np.cumsum(sizes[500:]) <= 50_000 - sizes[:first].sum()).sum())  # the room left, in the next call
    assert 0 < first < 500 and more < 5
    _score(scorer, path, refs[:500], cands[:500])
    cache = engine.default_encoder(False).cache
    assert cache.n_entries == first and cache._n_seen == 500 - first
    _score(scorer, path, refs[500:1000], cands[500:1000])   # past the budget: hashed only
    assert cache.n_entries == first + more and cache._n_seen == 1000 - first - more
    seen = scanned_texts(monkeypatch)
    got = _score(scorer, path, [_fresh(r) for r in refs[:1000]], cands[:1000])
    assert cache.n_entries == 1000                           # the others kept at second sight
    assert sorted(seen) == [1000 - first - more, 1000]       # the candidates, and only they of the references
    assert got[::50].tolist() == _expected(False, refs[:1000:50], cands[:1000:50])


def test_a_vocabulary_rebuild_empties_the_cache(encoders, monkeypatch):
    """Cached ids belong to one vocabulary generation: once the vocabulary is rebuilt (here at
    every call), they are not used, and the numbers stay rouge-score's."""
    monkeypatch.setattr(Vocabulary, "MAX_IDS", 5)
    scorer = RougeScorer(TYPES, use_stemmer=True)
    for s in range(3):
        refs, cands = _system(s, False)
        cands = [f"new{s} words first {c}" for c in cands]  # the rebuilt vocabulary numbers tokens anew
        for path in ("lists", "arrow"):
            assert _score(scorer, path, refs, cands).tolist() == _expected(True, refs, cands)
    assert engine.default_encoder(True).vocab.generation >= 4


def test_the_cache_stays_within_its_bound(encoders, monkeypatch):
    """Past the bound the cache is emptied and refilled (numbers unchanged); a batch whose new
    texts alone exceed it is not kept."""
    monkeypatch.setattr(TextCache, "MAX_BYTES", 100_000)
    scorer = RougeScorer(TYPES, use_stemmer=False)
    refs, cands = make_corpus("short", 160, 11)
    entries = []
    for a in range(0, 160, 20):
        for path in ("arrow", "lists"):   # kept by the first call, found by the second
            got = _score(scorer, path, refs[a:a + 20], cands[a:a + 20])
            assert got.tolist() == _expected(False, refs[a:a + 20], cands[a:a + 20])
        cache = engine.default_encoder(False).cache
        assert cache.nbytes <= 100_000
        entries.append(cache.n_entries)
    assert max(entries) > 20 and any(b < a for a, b in zip(entries, entries[1:]))  # filled, then emptied
    long_refs = [" ".join(refs)] * 2  # a text of ~100 KB, twice: kept, were it to fit
    got = _score(scorer, "lists", long_refs, cands[:2])
    assert got.tolist() == _expected(False, long_refs, cands[:2])
    assert cache.n_entries == 0 and cache.nbytes <= 100_000


def test_a_hit_is_verified_byte_for_byte():
    """An entry whose stored hash equals a text's but whose bytes differ is not that text's."""
    cache = TextCache()
    a, b = "the cat sat on a mat", "the cat sat on a hat"
    enc = DefaultEncoder(False)
    buf, offs = utf8_buffers(pa.array([a]))
    where, miss_at, miss_hash, _ = cache.probe(buf, offs)
    assert where.tolist() == [-1] and miss_at.tolist() == [0]
    assert cache.add(buf, offs, miss_at, miss_hash, enc._encode_units(buf, offs))
    assert cache.probe(buf, offs)[0].tolist() == [0]
    # the entry re-filed under b's hash, in b's home slot: a hash-only lookup would return it for b
    bbuf, boffs = utf8_buffers(pa.array([b]))
    hb = text_hash(bbuf, 0, len(b))
    mask = (cache.slots.shape[0] >> 1) - 1
    cache.slots[:] = -1
    home = int(hb >> np.uint64(32)) & mask
    cache.slots[2 * home] = np.array([hb], dtype=np.uint64).view(np.int64)[0]
    cache.slots[2 * home + 1] = 0
    where, miss_at, _, _ = cache.probe(bbuf, boffs)
    assert where.tolist() == [-1] and miss_at.tolist() == [0]


def test_equal_texts_in_one_batch_are_scanned_once(encoders, monkeypatch):
    seen = scanned_texts(monkeypatch)
    refs = [_fresh(REFS[i % 3]) for i in range(30)]
    cands = [_CANDS[i % 7] for i in range(30)]
    got = RougeScorer(TYPES).score_arrays(refs, cands).scores
    assert sorted(seen) == [3, 30]
    assert got.tolist() == _expected(False, refs, cands)


def test_arrays_grown_for_other_texts_start_again_when_a_text_does_not_fit():
    """Arrays grown for many tiny texts leave no room for one long text within the bound: the
    cache starts again from small arrays and keeps it; a text larger than the bound is not kept."""
    enc = DefaultEncoder(False)
    cache = TextCache(400_000)

    def put(texts):
        buf, offs = utf8_buffers(pa.array(texts))
        where, miss_at, miss_hash, _ = cache.probe(buf, offs)
        return cache.add(buf, offs, miss_at, miss_hash, enc._encode_units(buf, offs))

    assert put([f"t{i}" for i in range(3000)]) and cache.n_entries == 3000
    assert put(["word " * 20000]) and cache.n_entries == 1 and cache.nbytes <= 400_000
    assert not put(["x " * 300000]) and cache.n_entries == 0 and cache.nbytes <= 400_000


def test_the_text_hash_depends_on_the_bytes_alone():
    """The four-lane hash: equal bytes at any offset hash equally (lengths around the 32-byte
    blocks and the 8-byte tail), and changing any one byte of a text changes its hash."""
    rng = np.random.default_rng(3)
    for length in list(range(0, 70)) + [255, 256, 257]:
        text = rng.integers(0, 256, length).astype(np.uint8)
        hashes = set()
        for pad in range(9):
            noise = rng.integers(0, 256, pad + 9).astype(np.uint8)
            buf = np.concatenate([noise[:pad], text, noise[pad:]])
            hashes.add(int(text_hash(buf, pad, length)))
        assert len(hashes) == 1, length
        h = hashes.pop()
        for i in range(length):
            other = text.copy()
            other[i] ^= np.uint8(1 << (i % 8))
            assert int(text_hash(np.concatenate([other, np.zeros(9, np.uint8)]), 0, length)) != h, (length, i)
    assert len({int(text_hash(np.zeros(80, np.uint8), 0, n)) for n in range(64)}) == 64  # the length counts


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_held_references_are_copied_before_new_ones_empty_the_cache(path, encoders, monkeypatch):
    """One call with references the cache holds and new ones (kept) that do not fit beside them:
    the cache is emptied and refilled from its first entry, after the held references' ids were
    copied (copied after, they would be the new texts' ids)."""
    monkeypatch.setattr(TextCache, "MAX_BYTES", 90_000)
    scorer = RougeScorer(TYPES, use_stemmer=False)
    refs, cands = make_corpus("short", 120, 13)
    held, new = refs[:20], refs[20:120]
    _score(scorer, path, [_fresh(r) for r in held], cands[:20])
    cache = engine.default_encoder(False).cache
    assert cache.n_entries == 20
    batch = [_fresh(r) for r in held] + [_fresh(r) for r in new + new]
    got = _score(scorer, path, batch, cands[:20] + cands[20:120] * 2)
    assert cache.n_entries == 100  # emptied: the held ones gone, the new ones from entry 0
    assert got.tolist() == _expected(False, batch, cands[:20] + cands[20:120] * 2)


# words around the encoder's edges: stems, U+0130 and U+212A, other non-ASCII, digits, separators
_EDGE_WORDS = ["running", "runs", "caresses", "ponies", "sky", "dying", "generously", "the", "cat", "\u0130stanbul",
               "\u212aelvin", "caf\u00e9", "12", "x1y2", "\u65e5\u672c", "\U0001f600", "-", "A.B", "sensational",
               "\u00df", "\u0130", "\u212a", "argument", "\n", "\n\n", " ", "", "\u2014"]


def _edge_text(rng):
    return "".join(rng.choice(_EDGE_WORDS) + rng.choice([" ", "\n", "", ",", "\u00a0"])
                   for _ in range(rng.choice([0, 1, 2, 5, 8, 15])))


@pytest.mark.parametrize("seed", range(40))
def test_random_call_sequences_equal_rouge_score(seed, encoders, monkeypatch):
    """Seeded sequences of calls (lists, Arrow, score_batch; one or several references, repeated
    within a call, an example and across calls) under random bounds, first-sight budgets, scan
    groups and vocabulary rebuilds, and (odd seeds) calls of few short references skipping the cache
    between those that use it: every number is rouge-score's, held references included."""
    rng = random.Random(seed)
    monkeypatch.setattr(DefaultEncoder, "FEW_REFERENCES", (-1, 16)[seed % 2])  # not drawn: the sequence as before
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", rng.choice([0, 40, 200, 1 << 20]))
    monkeypatch.setattr(TextCache, "MAX_BYTES", rng.choice([0, 20_000, 64 << 20]))
    monkeypatch.setattr(Vocabulary, "MAX_IDS", rng.choice([30, 4_000_000]))
    monkeypatch.setattr(DefaultEncoder, "GROUP_UNITS", rng.choice([16, 1 << 22]))
    stem = rng.random() < 0.6
    scorer = RougeScorer(TYPES, use_stemmer=stem)
    pool = [_edge_text(rng) for _ in range(rng.choice([3, 10, 30]))]

    def pick(p):
        return _fresh(rng.choice(pool)) if rng.random() < p else _edge_text(rng)

    columns = []
    for _ in range(12):
        n = rng.choice([1, 3, 12, 40])
        if columns and rng.random() < 0.3:  # a column seen before (a run), maybe one text changed
            refs = [[_fresh(t) for t in r] if isinstance(r, list) else _fresh(r) for r in rng.choice(columns)]
            n = len(refs)
            if rng.random() < 0.3:
                e = rng.randrange(n)
                refs[e] = [_edge_text(rng)] if isinstance(refs[e], list) else _edge_text(rng)
        elif rng.random() < 0.5:
            refs = [[pick(0.7) for _ in range(rng.choice([1, 2, 3]))] for _ in range(n)]
        else:
            refs = [pick(0.7) for _ in range(n)]
        columns.append(refs)
        cands = [pick(0.3) for _ in range(n)]
        path = rng.choice(["lists", "arrow", "batch"])
        if path == "batch":
            got = [[list(d[t]) for t in TYPES] for d in scorer.score_batch(refs, cands)]
        else:
            got = _score(scorer, path, refs, cands).tolist()
        assert got == _expected(stem, refs, cands)


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_a_token_map_that_drops_tokens_is_applied_once_to_held_references(path, monkeypatch):
    """An encoder with a token map that drops some tokens (ROUGE-1.5.5's ``-s``) and maps others:
    references kept at first sight, at second sight and held give, call after call, the arrays
    of the whole batch encoded alone (tokens dropped once, sentences left empty removed)."""
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", 60)
    enc = DefaultEncoder(ascii_only=True, token_map=lambda t: None if t in ("the", "a") else t[:4])
    refs = ["the a\nthe cat sat\na", "the\na\nthe", "", "Running the dogs\n\nmapped words here",
            "a cat \u0130s here", "the mat\nof the cat"]
    rng = random.Random(4)
    for call in range(8):
        n = rng.choice([2, 4, 6])
        n_refs = np.array([rng.choice([1, 2, 3]) for _ in range(n)], dtype=np.int64)
        flat = [_fresh(rng.choice(refs)) for _ in range(int(n_refs.sum()))]
        cands = [f"the cat{call} sat\nthe" for _ in range(n)]
        if path == "lists":
            got = enc.encode_examples(cands, flat, n_refs)
        else:
            ro = np.concatenate([[0], np.cumsum(n_refs)])
            refs_col = pa.array([flat[a:b] for a, b in zip(ro[:-1], ro[1:])])
            got, _ = enc.encode_arrow(pa.array(cands), refs_col)
        alone = enc.encode(cands + flat)  # the block layout: every candidate, then every reference
        for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
            assert getattr(got, name).tolist() == getattr(alone, name).tolist(), (call, name)
    assert enc.cache.n_entries == len(refs)


# -- runs: a column of references seen again is found whole (TextCache.note_run / run_of) ---------

def _count_runs(monkeypatch):
    """The calls that found their references as a run (the encoder's append_run), counted."""
    from pipeline.text import encoder as encoder_module

    hits = []
    real = encoder_module.append_run

    def counted(*args):
        hits.append(args[-1])
        return real(*args)

    monkeypatch.setattr(encoder_module, "append_run", counted)
    return hits


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_a_column_seen_again_is_found_whole_not_text_by_text(path, encoders, monkeypatch):
    """Every system's column of references (new objects, the same texts in the same order) after
    the first is found as one run: no reference scanned, no text looked up one by one, the
    arrays those of the batch encoded alone, every number rouge-score's."""
    seen = scanned_texts(monkeypatch)
    hits = _count_runs(monkeypatch)
    probes = []
    real_probe = TextCache.probe
    monkeypatch.setattr(TextCache, "probe", lambda self, buf, offs: probes.append(1) or real_probe(self, buf, offs))
    scorer = RougeScorer(TYPES, use_stemmer=True)
    for s in range(4):
        refs, cands = _system(s, False)
        seen.clear()
        assert _score(scorer, path, refs, cands).tolist() == _expected(True, refs, cands)
        if s:
            assert sorted(seen) == [N_DOCS]  # the candidates alone
    assert hits == [N_DOCS] * 3 and len(probes) == 1
    enc = engine.default_encoder(True)
    refs, cands = _system(5, False)
    got = enc.encode_examples(cands, refs, np.ones(N_DOCS, dtype=np.int64)) if path == "lists" else \
        enc.encode_arrow(pa.array(cands), pa.array(refs))[0]
    assert len(hits) == 4
    alone = enc.encode(cands + refs)  # the block layout: every candidate, then every reference
    for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
        assert getattr(got, name).tolist() == getattr(alone, name).tolist(), name


@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_a_run_is_trusted_only_when_every_text_is_equal(path, encoders, monkeypatch):
    """A column of the same count and bytes as a run, one byte of one text changed (and, for
    lists, a list changed after the call that recorded it) is no run: looked up text by text,
    its numbers rouge-score's."""
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    refs, cands = _system(0, False)
    _score(scorer, path, refs, cands)
    for d in (0, 5, N_DOCS - 2):
        other = list(refs)
        k = other[d].find("a")
        other[d] = other[d][:k] + "o" + other[d][k + 1:]   # one ASCII byte for another: same length
        assert len(other[d].encode()) == len(refs[d].encode())
        assert _score(scorer, path, other, cands).tolist() == _expected(False, other, cands)
    assert hits == []
    # the caller's list changed after the call that recorded it: the run kept its own copy
    enc, ones = engine.default_encoder(False), np.ones(N_DOCS, dtype=np.int64)

    def encoded(refs):
        if path == "lists":
            return enc.encode_examples(cands, refs, ones)
        return enc.encode_arrow(pa.array(cands), pa.array(refs))[0]

    refs = [f"reference {d} of another column" for d in range(N_DOCS)]
    assert encoded(refs).tokens.tolist() == enc.encode(cands + refs).tokens.tolist()
    refs[3] = "an unrelated text"
    assert encoded(refs).tokens.tolist() == enc.encode(cands + refs).tokens.tolist()
    assert hits == []
    refs[3] = "reference 3 of another column"
    assert encoded(refs).tokens.tolist() == enc.encode(cands + refs).tokens.tolist()
    assert hits == [N_DOCS]


@pytest.mark.parametrize("forget", ["clear", "vocabulary", "bound"])
@pytest.mark.parametrize("path", ["lists", "arrow"])
def test_runs_are_forgotten_with_their_entries(path, forget, encoders, monkeypatch):
    """A run names entries: when they are forgotten (the cache cleared, the vocabulary rebuilt,
    the cache emptied to make room), the run is too, and the column is encoded again, exactly."""
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    refs, cands = _system(0, False)
    _score(scorer, path, refs, cands)
    enc = engine.default_encoder(False)
    if forget == "clear":
        enc.cache.clear()
    elif forget == "vocabulary":
        enc.vocab.reset()
    else:  # other texts, kept, that do not fit beside the run's: the cache is emptied first
        enc.cache.max_bytes = enc.cache.nbytes + 1
        more, more_cands = make_corpus("short", 200, 3)
        _score(scorer, path, more + more, more_cands + more_cands)
        assert enc.cache.run_of(*utf8_buffers(pa.array(refs))) < 0 and enc.cache.run_of_list(refs) < 0
    refs, cands = _system(1, False)
    assert _score(scorer, path, refs, cands).tolist() == _expected(False, refs, cands)
    assert hits == []


def test_a_run_is_recorded_from_held_texts_and_texts_kept_at_second_sight(encoders, monkeypatch):
    """Past the first-sight budget a column's first texts are kept at first sight and the rest at
    second sight: the second call holds them all, consecutive, and records the run the third finds;
    a column of held texts in another order is no run."""
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", 300)
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    refs, cands = _system(0, False)
    for call in range(3):
        assert _score(scorer, "arrow", [_fresh(r) for r in refs], cands).tolist() == _expected(False, refs, cands)
        assert len(hits) == (1 if call == 2 else 0)
    assert engine.default_encoder(False).cache.n_entries == N_DOCS
    back = refs[::-1]
    assert _score(scorer, "arrow", back, cands).tolist() == _expected(False, back, cands)
    assert len(hits) == 1


def test_a_list_of_held_texts_out_of_order_is_no_run(encoders, monkeypatch):
    """Held texts whose entries span the right range but not in order (0, 2, 1, 3) are no run: a
    list recorded as one would be copied as entries 0, 1, 2, 3."""
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    texts = ["the cat sat", "a dog ran far", "birds flew south", "the end came"]
    cands = ["the dog sat", "a cat ran", "south birds", "the end"]
    _score(scorer, "lists", [_fresh(t) for t in texts], cands)
    mixed = [texts[0], texts[2], texts[1], texts[3]]
    for _ in range(2):
        assert _score(scorer, "lists", [_fresh(t) for t in mixed], cands).tolist() == _expected(False, mixed, cands)
    assert hits == []


def test_no_run_names_entries_forgotten_while_its_texts_were_kept(encoders, monkeypatch):
    """A column of new texts and held ones, the new ones not fitting beside what the cache holds:
    the cache is emptied, the new texts become its first entries, and the held ones' entry
    numbers are void; no run is recorded from them (a later list would take other texts' ids)."""
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    small = [f"held text number {i} here" for i in range(10)]
    _score(scorer, "lists", [_fresh(t) for t in small], ["a candidate"] * 10)
    cache = engine.default_encoder(False).cache
    cache.max_bytes = cache.nbytes  # no array may grow: new texts that do not fit empty the cache
    # two new texts that fill the arena's bytes but for the held ones': they fit alone, not beside them
    held_bytes = int(cache.text_off[cache.n_entries])
    per_text = (cache.arena.shape[0] - held_bytes // 2) // 2
    big = [" ".join(f"w{i}{j:06d}" for j in range(per_text // 9)) for i in range(2)]
    assert cache.arena.shape[0] - held_bytes < sum(map(len, big)) <= cache.arena.shape[0]
    column = big + small[2:4]  # new texts first: they become entries 0 and 1 after the emptying
    cands = ["w0000001 w1000002", "held text"] * 2
    assert _score(scorer, "lists", [_fresh(t) for t in column], cands).tolist() == _expected(False, column, cands)
    assert cache.n_entries == 2
    others = ["other words entirely", "nothing alike at all"]
    _score(scorer, "lists", others, ["x", "y"])  # kept as entries 2 and 3
    assert cache.n_entries == 4
    assert _score(scorer, "lists", [_fresh(t) for t in column], cands).tolist() == _expected(False, column, cands)
    assert hits == []


# -- runs under random call sequences: whole columns seen again, changed, sliced, in other forms ---

def _arrow_column(refs, rng, references=True):
    """``refs`` (strs, or lists of strs) as an Arrow column of a random type: strings or lists
    (single ``references`` maybe as lists of one), 32- or 64-bit offsets, one chunk or two, or a
    slice of a larger column."""
    lists = any(isinstance(r, list) for r in refs)
    if references and not lists and rng.random() < 0.3:  # one reference each, as lists of one
        refs, lists = [[r] for r in refs], True
    text = rng.choice([pa.string(), pa.large_string()])
    kind = rng.choice([pa.list_, pa.large_list]) if lists else None
    typ = kind(text) if lists else text
    form = rng.choice(["whole", "chunked", "sliced"])
    if form == "sliced":  # a slice at an offset of a column with other rows around it
        pad = [["before x"], ["after y", "z"]] if lists else ["before x", "after y"]
        return pa.array(pad[:1] * 2 + refs + pad[1:] * 3, type=typ).slice(2, len(refs))
    arr = pa.array(refs, type=typ)
    if form == "chunked" and len(refs) > 1:
        cut = rng.randrange(1, len(refs))
        return pa.chunked_array([arr.slice(0, cut), arr.slice(cut)])
    return arr


def _changed(text, rng):
    """``text`` with one ASCII letter changed (its length and byte count kept), or another text."""
    at = [i for i, ch in enumerate(text) if ch.isascii() and ch.isalpha()]
    if not at or rng.random() < 0.2:
        return _edge_text(rng) + " changed"
    i = rng.choice(at)
    return text[:i] + ("q" if text[i] != "q" else "z") + text[i + 1:]


class _Text(str):
    """A str subclass (equal by value): the encoder reads its characters."""


def _variant(column, rng):
    """A column seen before as new objects: maybe one text changed, two neighbouring examples
    swapped, a contiguous slice of its examples; its strs maybe of a str subclass."""
    wrap = _Text if rng.random() < 0.2 else _fresh
    refs = [[wrap(t) for t in r] if isinstance(r, list) else wrap(r) for r in column]
    if len(refs) > 2 and rng.random() < 0.15:  # entries that span the column's range, out of order
        e = len(refs) // 2
        refs[e - 1], refs[e] = refs[e], refs[e - 1]
    if rng.random() < 0.25:
        e = rng.randrange(len(refs))
        if isinstance(refs[e], list):
            k = rng.randrange(len(refs[e]))
            refs[e] = refs[e][:k] + [_changed(refs[e][k], rng)] + refs[e][k + 1:]
        else:
            refs[e] = _changed(refs[e], rng)
    if len(refs) > 1 and rng.random() < 0.15:
        a = rng.randrange(len(refs))
        refs = refs[a:rng.randrange(a + 1, len(refs) + 1)]
    return refs


def _scored(scorer, path, refs, cands, rng):
    """(P/R/F as nested lists, the BatchScores or None) of one call by ``path``."""
    if path in ("batch", "lists") and rng.random() < 0.3:  # examples of mixed forms: strs, lists, tuples
        refs = [r if not isinstance(r, list) else r[0] if len(r) == 1 and rng.random() < 0.5
                else tuple(r) if rng.random() < 0.3 else r for r in refs]
    if path == "batch":
        return [[list(d[t]) for t in TYPES] for d in scorer.score_batch(refs, cands)], None
    if path == "lists":
        res = scorer.score_arrays(refs, cands)
    elif path == "table":
        table = pa.table({"candidate": _arrow_column(cands, rng, False), "references": _arrow_column(refs, rng)})
        out = scorer.score_table(table)
        cols = [[out.column(f"{t}_{s}").to_pylist() for s in ("precision", "recall", "fmeasure")] for t in TYPES]
        return [[[cols[t][s][e] for s in range(3)] for t in range(len(TYPES))] for e in range(len(cands))], None
    else:
        res = scorer.score_arrow(_arrow_column(refs, rng), _arrow_column(cands, rng, False))
    return res.scores.tolist(), res


def _check_candidate_tokens(res, enc, cands):
    """Diagnostics reuse the scored candidates' tokens: those of the candidates encoded alone."""
    tokens, start, end, generation = res.candidate_tokens()
    alone = enc.encode(list(cands))
    if alone.generation != generation:  # the vocabulary was rebuilt in between: ids not comparable
        return
    for e in range(len(cands)):
        assert tokens[start[e]:end[e]].tolist() == alone.tokens[alone.doc_tok[e]:alone.doc_tok[e + 1]].tolist()


def _encoder_call_then_mutate(enc, stem, refs, cands, rng):
    """The encoder called with a Python list, the list changed in place by its caller, and the
    same list object passed again: both calls give rouge-score's numbers."""
    from pipeline.scoring import batch
    from pipeline.scoring.types import parse_rouge_types

    types = parse_rouge_types(TYPES)
    flat, n_refs = batch.split_references(refs, cands)
    for _ in range(2):
        got = batch.score_blocks(enc.encode_examples(cands, flat, n_refs), n_refs, types).scores.tolist()
        per_example = np.split(np.array(flat, dtype=object), np.cumsum(n_refs)[:-1])
        assert got == _expected(stem, [list(r) for r in per_example], cands)
        k = rng.randrange(len(flat))
        flat[k] = _changed(flat[k], rng)


@pytest.mark.parametrize("seed", range(120))
def test_random_run_sequences_equal_rouge_score(seed, encoders, monkeypatch):
    """Seeded sequences of calls that mostly repeat a few whole columns (new objects; sometimes
    one text changed by a byte or replaced, a slice of the examples, strs of a subclass, strings
    as lists of one) through lists, Arrow (string or large_string, list or large_list, chunked,
    sliced), score_table, score_batch and the encoder itself (its list then changed in place
    and passed again), from two threads at times, with the cache cleared, the vocabulary rebuilt
    and small cache bounds: every number is rouge-score's, and the candidates' tokens kept for
    diagnostics are those of the candidates encoded alone."""
    rng = random.Random(1000 + seed)
    monkeypatch.setattr(TextCache, "FIRST_SIGHT_BYTES", rng.choice([0, 60, 1 << 20, 1 << 20]))
    # the cache's first arrays take ~64 KB: a bound a little above it is emptied often
    monkeypatch.setattr(TextCache, "MAX_BYTES", rng.choice([0, 70_000, 100_000, 64 << 20, 64 << 20, 64 << 20]))
    monkeypatch.setattr(TextCache, "LIST_RUNS", rng.choice([1, 4]))
    monkeypatch.setattr(Vocabulary, "MAX_IDS", rng.choice([60, 400, 4_000_000, 4_000_000, 4_000_000]))
    monkeypatch.setattr(DefaultEncoder, "GROUP_UNITS", rng.choice([16, 1 << 22]))
    stem = rng.random() < 0.5
    scorer = RougeScorer(TYPES, use_stemmer=stem)
    enc = engine.default_encoder(stem)
    pool = [_edge_text(rng) for _ in range(rng.choice([4, 12]))]

    def pick(p=0.5):
        return _fresh(rng.choice(pool)) if rng.random() < p else _edge_text(rng)

    def ref():  # mostly distinct texts (a text repeated in a column makes it no run), an empty one at times
        if rng.random() < 0.05:
            return rng.choice(["", pick(0.5)])
        return f"{_edge_text(rng)}{rng.choice([' ', chr(10)])}r{rng.randrange(10**6)}"

    def new_column():
        n = rng.choice([1, 2, 5, 12, 30])
        if rng.random() < 0.5:
            return [[ref() for _ in range(rng.choice([1, 2, 3]))] for _ in range(n)]
        return [ref() for _ in range(n)]

    columns = [new_column() for _ in range(3)]
    for _ in range(20):
        event = rng.random()
        if event < 0.05:
            enc.cache.clear()
        elif event < 0.1:
            enc.vocab.reset()
        if rng.random() < 0.3:  # the last column again (a changed or out of order one too)
            refs = [[_fresh(t) for t in r] if isinstance(r, list) else _fresh(r) for r in columns[-1]]
        else:
            refs = _variant(rng.choice(columns), rng) if rng.random() < 0.85 else new_column()
            columns.append(refs)
        cands = [pick() for _ in range(len(refs))]
        path = rng.choice(["lists", "arrow", "arrow", "table", "batch", "encoder", "threads"])
        if path == "encoder":
            _encoder_call_then_mutate(enc, stem, refs, cands, rng)
        elif path == "threads":  # two calls at once on the shared encoder
            other = _variant(rng.choice(columns), rng)
            calls = [(refs, cands), (other, [pick() for _ in range(len(other))])]
            seeds = [rng.random() for _ in calls]
            with ThreadPoolExecutor(2) as pool_:
                got = list(pool_.map(lambda c: _scored(scorer, "arrow" if c[2] < 0.5 else "lists", c[0], c[1],
                                                      random.Random(c[2]))[0], [c + (s,) for c, s in zip(calls, seeds)]))
            for (r, c), g in zip(calls, got):
                assert g == _expected(stem, r, c)
        else:
            got, res = _scored(scorer, path, refs, cands, rng)
            assert got == _expected(stem, refs, cands), path
            if res is not None:
                _check_candidate_tokens(res, enc, cands)


class _AnyText(str):
    """A str subclass whose ``==`` says yes to every str."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def test_a_list_run_is_found_only_for_strs_of_the_same_value(encoders, monkeypatch):
    """A list equal to a recorded one by ``==`` but not by value is no run: items that only compare
    equal to its strs (a UserString) raise TypeError as they do the first time (rouge-score raises
    too), and a str subclass whose ``==`` says yes to anything is scored by its own value."""
    from collections import UserString

    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    refs, cands = ["the cat sat on the mat", "a dog ran far away"], ["the cat", "a dog"]
    for _ in range(2):
        assert _score(scorer, "lists", [[_fresh(r)] for r in refs], cands).tolist() == _expected(False, refs, cands)
    assert len(hits) == 1
    with pytest.raises(TypeError):
        rouge_scorer.RougeScorer(TYPES).score_multi([UserString(refs[0])], cands[0])
    with pytest.raises(TypeError):
        scorer.score_arrays([[UserString(r)] for r in refs], cands)
    other = [_AnyText("birds flew south"), _AnyText("")]
    assert [str(t) for t in other] != refs and other == refs
    assert _score(scorer, "lists", [[t] for t in other], cands).tolist() == _expected(False, [str(t) for t in other],
                                                                                      cands)
    assert len(hits) == 1


def test_runs_are_forgotten_past_their_bound(encoders, monkeypatch):
    """The runs' keys are bounded (``MAX_RUNS``): past it they are forgotten, and a column seen
    again is looked up text by text, recorded again, and found whole after that."""
    monkeypatch.setattr(TextCache, "MAX_RUNS", 3)
    hits = _count_runs(monkeypatch)
    scorer = RougeScorer(TYPES)
    columns = [[f"column {c} text {i}" + " word" * c for i in range(3)] for c in range(4)]
    cands = ["column text", "text word", "a b"]
    for col in columns:
        _score(scorer, "arrow", col, cands)
    cache = engine.default_encoder(False).cache
    assert len(cache._runs) <= 3
    for _ in range(2):
        assert _score(scorer, "arrow", [_fresh(t) for t in columns[0]], cands).tolist() == \
            _expected(False, columns[0], cands)
    assert hits == [3]  # the first forgotten, recorded again from its held entries, then found
