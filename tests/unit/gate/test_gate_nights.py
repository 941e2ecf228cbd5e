"""Issue 27: the gate night after night, simulated on real outputs (shared/data dialsummeval: 13
systems x 100 dialogues, scored once with ``pipeline.RougeScorer``; every night is built from those
per-example scores, so 200 nights cost seconds).

A night of an unchanged build re-samples 2% of each system's candidates from the other systems'
outputs for the same dialogue (seeded), which makes the night-to-night noise of a mean heavy-tailed
(a few large jumps).  The documented false-alarm rate (docs/regressions.md) is ``alpha`` = 1% of
unchanged nights alarming anywhere (13 systems x 4 types = 52 rows).  The test allows 5 alarmed
nights of 200 (2.5%): a gate whose rate is exactly 1% passes with probability 98.4% (binomial), and
the seeds are fixed."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.shared import DATA, DATA_REASON, HAVE_DATA, load_records
from pipeline.gate.compare import CompareOptions, compare, history_judgement
from pipeline.gate.control import choose_base, control_history, exit_status
from pipeline.gate.runs import RunData

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
SWAP = 0.02
TRUNC_SYSTEM = "F:BART"
SIG = "rouge:1|tok:default|seed:12345"
FAST = dict(n_boot=0, n_perm=0, texts=False)


@pytest.fixture(scope="module")
def world():
    """``F[doc, system, type]``: the F of system's output for doc; ``T``: of its truncation to a
    third of its words (as support.newsroom_runs.injected)."""
    if not HAVE_DATA:
        pytest.skip(DATA_REASON)
    from pipeline import RougeScorer

    recs = load_records(DATA, "dialsummeval")
    systems = sorted({r["system"] for r in recs})
    docs = sorted({r["doc_id"] for r in recs})
    by = {(r["doc_id"], r["system"]): r for r in recs}
    refs, cands, cuts, at = [], [], [], []
    for i, d in enumerate(docs):
        for j, s in enumerate(systems):
            words = by[(d, s)]["candidate"].split()
            refs.append(by[(d, systems[0])]["references"])
            cands.append(by[(d, s)]["candidate"])
            cuts.append(" ".join(words[:max(1, len(words) // 3)]))
            at.append((i, j))
    scorer = RougeScorer(TYPES)
    full, cut = scorer.score_arrays(refs, cands).scores, scorer.score_arrays(refs, cuts).scores
    F, T = np.zeros((len(docs), len(systems), 4, 3)), np.zeros((len(docs), len(systems), 4, 3))
    for k, (i, j) in enumerate(at):
        F[i, j], T[i, j] = full[k], cut[k]
    return {"F": F, "T": T, "systems": systems, "docs": [str(d) for d in docs]}


class Nights:
    """Simulated nightly runs as in-memory ``RunData``, numbered by date."""

    def __init__(self, world, seed: int):
        self.w, self.rng, self.k = world, np.random.default_rng(seed), 0

    def scores(self, truncated: np.ndarray | None = None) -> np.ndarray:
        """One night's per-example scores ``(systems, docs, types, P/R/F)``."""
        F, T, systems = self.w["F"], self.w["T"], self.w["systems"]
        D, S = F.shape[:2]
        out = np.empty((S, D, 4, 3))
        for j, s in enumerate(systems):
            other = self.rng.integers(0, S - 1, D)
            other[other >= j] += 1
            cand = np.where(self.rng.random(D) < SWAP, other, j)
            out[j] = F[np.arange(D), cand]
            if truncated is not None and s == TRUNC_SYSTEM:
                out[j, truncated] = T[truncated, cand[truncated]]
        return out

    def night(self, truncated: np.ndarray | None = None, signature: str = SIG) -> RunData:
        v_all, systems, docs = self.scores(truncated), self.w["systems"], self.w["docs"]
        frames = []
        for j, s in enumerate(systems):
            v = v_all[j]
            cols = {f"{t}_{st}": v[:, a, b] for a, t in enumerate(TYPES)
                    for b, st in enumerate(("precision", "recall", "fmeasure"))}
            frames.append(pd.DataFrame({"id": docs, "system": s, "cand_tokens": 10, **cols}))
        self.k += 1
        time = f"2026-{1 + self.k // 28:02d}-{1 + self.k % 28:02d}T00:00:00"
        info = {"config": {"scoring": {"rouge_types": TYPES}}, "signature": signature, "started_at": time}
        return RunData(f"nightly/{self.k:04d}", info, None, {"finished_at": time}, pd.concat(frames, ignore_index=True))

    def truncation(self) -> np.ndarray:
        D = self.w["F"].shape[0]
        return self.rng.permutation(D)[: D // 10]


def gate(runs: list[RunData], new: RunData, window: int = 14, **opts) -> dict:
    """``compare NEW --previous`` on in-memory runs: the in-control history and its base, then the
    verdict recorded on the new run (as the command writes _gate.json)."""
    history, _ = control_history(runs)
    base = choose_base(new, history)
    res = compare(base, new, history=history[-window:], **{**FAST, **opts})
    new.record = {"verdict": res["verdict"], "base": base.url}
    return res


def alarms(history: list[np.ndarray], new: np.ndarray, opts: CompareOptions) -> set:
    """The (system, type) rows of one night that alarm, each judged by the function ``compare`` uses
    for every history row (:func:`history_judgement`) at the night's level, ``alpha / m``, on the
    per-example F arrays of the last ``window`` in-control nights."""
    S = new.shape[0]
    level = opts.alpha / (S * len(TYPES))
    out = set()
    for j in range(S):
        for a, t in enumerate(TYPES):
            hist = np.stack([h[j, :, a, 2] for h in history[-opts.window:]])
            if history_judgement(new[j, :, a, 2], hist, level, opts).outside:
                out.add((j, t))
    return out


@pytest.mark.skipif(not HAVE_DATA, reason=DATA_REASON)
def test_unchanged_nights_alarm_at_the_documented_rate_and_truncation_alarms(world):
    opts = CompareOptions()
    sim = Nights(world, seed=27)
    history = [sim.scores() for _ in range(opts.window)]
    quiet_alarms, caught, tried = 0, 0, 0
    bart = world["systems"].index(TRUNC_SYSTEM)
    for k in range(200):
        if k % 5 == 0:   # the same night, but 10% of one system's outputs truncated: never kept in the history
            tried += 1
            bad = alarms(history, sim.scores(truncated=sim.truncation()), opts)
            caught += bool(bad) and {j for j, _ in bad} == {bart}
        new = sim.scores()
        quiet_alarms += bool(alarms(history, new, opts))
        history.append(new)            # an unchanged night is in control (an alarmed one would be left out)
    assert quiet_alarms <= 5, f"{quiet_alarms} of 200 unchanged nights alarmed (documented: 1%)"
    assert caught >= 0.95 * tried, f"a 10% truncation alarmed on {caught} of {tried} nights"


@pytest.mark.skipif(not HAVE_DATA, reason=DATA_REASON)
def test_compare_judges_a_night_as_the_simulation_does(world):
    """The arrays above and ``compare`` on the same nights as runs: the same rows alarm."""
    sim = Nights(world, seed=5)
    runs = [sim.night() for _ in range(14)]
    arrays = [np.stack([r.scores[r.scores["system"] == s][[f"{t}_{st}" for t in TYPES for st in
                                                             ("precision", "recall", "fmeasure")]]
                        .to_numpy().reshape(-1, 4, 3) for s in world["systems"]]) for r in runs]
    for truncated in (None, sim.truncation()):
        new = sim.night(truncated=truncated)
        res = compare(runs[-1], new, history=runs, **FAST)
        got = {(r["system"], r["type"]) for r in res["rows"] if r["alarm"]}
        arr = np.stack([new.scores[new.scores["system"] == s][[f"{t}_{st}" for t in TYPES for st in
                                                                ("precision", "recall", "fmeasure")]]
                        .to_numpy().reshape(-1, 4, 3) for s in world["systems"]])
        want = {(world["systems"][j], t) for j, t in alarms(arrays, arr, CompareOptions())}
        assert got == want and res["band"]["history"]["rows_judged"] == 52
        assert (truncated is not None) == bool(got)


@pytest.mark.skipif(not HAVE_DATA, reason=DATA_REASON)
def test_a_persistent_regression_alarms_every_night_until_accepted_then_goes_quiet(world):
    sim = Nights(world, seed=4)
    runs = [sim.night() for _ in range(14)]
    cut = sim.truncation()
    verdicts = []
    for _ in range(6):                                    # the regression ships and stays
        new = sim.night(truncated=cut)
        verdicts.append(gate(runs, new)["verdict"])
        runs.append(new)
    assert verdicts == ["moved"] * 6, verdicts            # never absorbed into the band
    runs[-1].accepted = {"by": "test", "at": "2026-02-01T00:00:00+00:00", "reason": "shorter summaries on purpose"}
    before = runs[-2].url
    after = []
    for _ in range(12):
        new = sim.night(truncated=cut)
        res = gate(runs, new, n_boot=200)     # the bootstrap band while the new history is short
        after.append(res["verdict"])
        assert before not in {r["url"] for r in res["trend"]["runs"]}   # before the acceptance: never again
        runs.append(new)
    assert "moved" not in after, after
    assert after[-1] == "no change" and after[:4] == ["inconclusive"] * 4, after   # too little history at first


def test_a_revert_compares_with_the_last_run_of_its_own_settings():
    """Item 6: nights of settings A, a night of B (accepted), then A again: the base is the last
    in-control A night, not the latest night whatever its settings."""
    def run(name, sig, verdict=None, accepted=None):
        r = RunData(name, {"signature": sig, "config": {"scoring": {"rouge_types": ["rouge1"]}}}, None, None,
                    pd.DataFrame({"id": [], "system": []}))
        r.record, r.accepted = ({"verdict": verdict} if verdict else None), accepted
        return r

    a1, a2 = run("a1", "A", "no change"), run("a2", "A", "no change")
    a3 = run("a3", "A", "moved")                          # out of control: never a base
    b1 = run("b1", "B", "not comparable")
    history, notes = control_history([a1, a2, a3, b1])
    assert [r.url for r in history] == ["a1", "a2"] and "a3 (moved)" in notes[0]
    assert choose_base(run("new", "A"), history).url == "a2"
    b1.accepted = {"by": "x", "at": "t", "reason": "new tokenizer"}   # accepting B starts a new history
    history, notes = control_history([a1, a2, a3, b1])
    assert [r.url for r in history] == ["b1"] and "accepted by x" in notes[0]
    assert choose_base(run("new", "B"), history).url == "b1"
    assert exit_status({"verdict": "inconclusive"}) == 4 and exit_status({"verdict": "moved"}) == 1
