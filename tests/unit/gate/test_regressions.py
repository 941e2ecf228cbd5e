"""Issue #18: comparable or loud, both directions and both sides of every threshold, the band
learned from history (and from replicates), on synthetic runs (exact arithmetic in the test) and on
real system outputs (shared/data newsroom and dialsummeval, scored in sync mode)."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from support.newsroom_runs import DOC_KEY, injected, records, resampled, score, swapped, write
from support.shared import DATA_REASON, HAVE_DATA, needs_data
from pipeline.cli import main as cli
from pipeline.gate.compare import compare
from pipeline.gate.runs import RunData, load_run

FAST = dict(n_boot=300, n_perm=300)
SIG = "rouge:1|tok:default|seed:12345"


def run_of(url: str, f: dict[str, list[float]], signature: str = SIG, ids=None, time: str = "") -> RunData:
    """An in-memory run of one rouge type whose F (and P, R) per example are ``f[system]``."""
    rows = []
    for system, vals in f.items():
        for i, v in enumerate(vals):
            rows.append({"id": (ids or {}).get(system, [f"d{j}" for j in range(len(vals))])[i], "system": system,
                         "rouge1_precision": v, "rouge1_recall": v, "rouge1_fmeasure": v, "cand_tokens": 10})
    info = {"config": {"scoring": {"rouge_types": ["rouge1"]}}, "signature": signature, "started_at": time}
    return RunData(url, info, None, {"finished_at": time}, pd.DataFrame(rows))


def f_row(res, system="A"):
    (r,) = [r for r in res["rows"] if r["system"] == system and r["stat"] == "fmeasure"]
    return r


BASE = [0.2, 0.3, 0.4, 0.5, 0.35, 0.45, 0.25, 0.55]


# ----------------------------------------------------------------------------- bootstrap band
def test_upward_move_alarms_moved_up():
    base = run_of("b", {"A": BASE, "B": BASE})
    new = run_of("n", {"A": [v + 0.05 for v in BASE], "B": BASE})
    res = compare(base, new, texts=False, **FAST)
    assert res["verdict"] == "moved" and res["moved"]
    assert f_row(res)["alarm"] and f_row(res)["status"] == "moved up" and f_row(res)["band"] == "bootstrap"
    assert not f_row(res, "B")["alarm"] and f_row(res, "B")["status"] == "no change"
    down = compare(base, run_of("n", {"A": [v - 0.05 for v in BASE], "B": BASE}), texts=False, **FAST)
    assert f_row(down)["alarm"] and f_row(down)["status"] == "moved down"


def test_min_effect_alarms_at_the_threshold_and_not_below():
    base = run_of("b", {"A": BASE})
    new = run_of("n", {"A": [v + 0.003 for v in BASE]})
    delta = float(np.mean(np.array([v + 0.003 for v in BASE]) - np.array(BASE)))   # the observed mean delta
    at = compare(base, new, min_effect=delta, texts=False, **FAST)
    assert f_row(at)["ci_low"] > 0 and f_row(at)["alarm"], f_row(at)        # AT the threshold: alarm
    above = compare(base, new, min_effect=float(np.nextafter(delta, 1.0)), texts=False, **FAST)
    assert not f_row(above)["alarm"] and f_row(above)["status"] == "no change"
    # the fixed band: strictly outside alarms, on the band is inside
    assert not f_row(compare(base, new, band=delta, texts=False, **FAST))["alarm"]
    assert f_row(compare(base, new, band=float(np.nextafter(delta, 0.0)), texts=False, **FAST))["alarm"]


def test_large_delta_whose_interval_contains_zero_does_not_alarm():
    base = run_of("b", {"A": [0.05, 0.9, 0.05, 0.9, 0.5]})
    new = run_of("n", {"A": [0.95, 0.3, 0.95, 0.3, 0.5]})       # d = +0.9, -0.6, +0.9, -0.6, 0: mean +0.12
    r = f_row(compare(base, new, texts=False, n_boot=1000, n_perm=300))
    assert r["delta"] > 0.1 and r["ci_low"] < 0 < r["ci_high"]
    assert not r["alarm"] and r["status"] == "inconclusive"


# ----------------------------------------------------------------------------- comparable or loud
def test_zero_and_half_coverage_are_not_comparable():
    base = run_of("b", {"A": BASE, "B": BASE})
    none = run_of("n", {"A": BASE, "B": BASE}, ids={"A": [f"x{j}" for j in range(8)]})
    res = compare(base, none, texts=False, **FAST)
    assert res["verdict"] == "not comparable" and not res["moved"] and not res["comparable"]
    assert f_row(res)["status"] == "no common examples" and f_row(res)["status"] != "no change"
    assert any("'A': coverage 0.0%" in b for b in res["not_comparable"])
    # 0% can never be comparable, whatever --min-coverage says
    assert compare(base, none, min_coverage=0.0, texts=False, **FAST)["verdict"] == "not comparable"
    half = run_of("n", {"A": BASE[:4], "B": BASE}, ids={"A": [f"d{j}" for j in range(4)]})
    res = compare(base, half, texts=False, **FAST)
    assert res["verdict"] == "not comparable" and any("'A': coverage 50.0% (4 of 8" in b for b in res["not_comparable"])
    # at the threshold it is comparable, just above it is not
    assert compare(base, half, min_coverage=0.5, texts=False, **FAST)["verdict"] == "no change"
    assert compare(base, half, min_coverage=0.5000001, texts=False, **FAST)["verdict"] == "not comparable"
    missing = compare(base, run_of("n", {"B": BASE}), texts=False, **FAST)
    assert missing["verdict"] == "not comparable"
    assert any("only in the base run" in b for b in missing["not_comparable"])


def test_coverage_counts_only_examples_with_finite_scores_in_both_runs():
    """A too_long example (NaN scores) is in both runs but not compared: it does not count."""
    nan = float("nan")
    base = run_of("b", {"A": BASE, "B": BASE})
    half = run_of("n", {"A": [nan] * 4 + BASE[4:], "B": BASE})
    res = compare(base, half, texts=False, **FAST)
    assert res["verdict"] == "not comparable", res["verdict"]
    assert any("'A': coverage 50.0% (4 of 8 base examples compared, 4 more without finite scores" in b
               for b in res["not_comparable"]), res["not_comparable"]
    assert compare(base, half, min_coverage=0.5, texts=False, **FAST)["verdict"] == "no change"
    unscored = run_of("n", {"A": [nan] * 8, "B": BASE})
    res = compare(base, unscored, min_coverage=0.0, texts=False, **FAST)   # n = 0 is never "no change"
    assert res["verdict"] == "not comparable" and f_row(res)["n"] == 0
    assert any("'A': coverage 0.0% (0 of 8" in b for b in res["not_comparable"])


def test_different_signatures_are_not_comparable_unless_allowed():
    base = run_of("b", {"A": BASE})
    other = run_of("n", {"A": BASE}, signature=SIG.replace("tok:default", "tok:unicode"))
    res = compare(base, other, texts=False, **FAST)
    assert res["verdict"] == "not comparable" and "tok: default vs unicode" in res["not_comparable"][0]
    ok = compare(base, other, allow_different_settings=True, texts=False, **FAST)
    assert ok["verdict"] == "no change" and ok["notes"]


# ----------------------------------------------------------------------------- history band
def _history(means: list[float], n=len(BASE)):
    return [run_of(f"h{j}", {"A": [m] * n}, time=f"2026-08-{10 + j:02d}") for j, m in enumerate(means)]


N_EX = 40
BIG = [0.2 + 0.5 * ((7 * j) % 11) / 11 for j in range(N_EX)]


def _noisy_history(n_runs=7):
    """In-control nights: each changes one example by +-0.1 (a swapped output), the rest identical."""
    runs = []
    for j in range(n_runs):
        f = list(BIG)
        f[(5 * j) % N_EX] += 0.1 if j % 2 else -0.1
        runs.append(run_of(f"h{j}", {"A": f}, time=f"2026-08-{10 + j:02d}"))
    return runs


def test_history_band_each_example_against_its_own_history_both_directions():
    """Issue 27: the history band is a sign test of every compared example against its own
    in-control history (one-sided at alpha / m / 2 each way), with the t prediction band of the mean
    drawn on [0, 1].  (It replaced mean +- k * sd, which alarmed on a quarter of unchanged nights of
    realistic, heavy-tailed noise.)"""
    hist = _noisy_history()
    quiet = f_row(compare(hist[-1], run_of("n", {"A": BIG}), history=hist, texts=False, **FAST))
    assert quiet["band"] == "history" and quiet["band_runs"] == 7 and quiet["status"] == "no change", quiet
    assert 0 <= quiet["band_low"] <= quiet["band_high"] <= 1 and quiet["detectable"] == 0.002
    for sign, status in ((-1, "moved down"), (1, "moved up")):
        f = [v + sign * 0.1 if j % 4 == 0 else v for j, v in enumerate(BIG)]       # 10 of 40 examples moved
        res = compare(hist[-1], run_of("n", {"A": f}), history=hist, texts=False, **FAST)
        r = f_row(res)
        assert r["alarm"] and r["status"] == status and res["verdict"] == "moved", r
        st = r["sign_test"]
        assert st[status.split()[1]] == 10 and st["p_" + status.split()[1]] <= res["band"]["history"]["level_per_row"] / 2
    one = [v - 0.1 if j == 3 else v for j, v in enumerate(BIG)]                    # one example: as in control
    assert f_row(compare(hist[-1], run_of("n", {"A": one}), history=hist, texts=False, **FAST))["status"] == "no change"
    assert res["band"]["history"]["alpha"] == 0.01 and res["band"]["history"]["rows_judged"] == 1


def test_identical_history_alarms_from_min_effect_on():
    hist = _history([0.4] * 6)                                   # no example ever moved: every move counts
    value = float(np.mean(np.full(len(BASE), 0.41)))             # the new run's mean
    centre = float(np.mean(np.full(len(BASE), 0.4)))             # the examples' own reference
    new = run_of("n", {"A": [0.41] * len(BASE)})
    at = f_row(compare(hist[-1], new, history=hist, min_effect=value - centre, texts=False, **FAST))
    assert at["band"] == "history" and at["band_sd"] < 1e-15 and at["alarm"] and at["status"] == "moved up"
    above = f_row(compare(hist[-1], new, history=hist, min_effect=float(np.nextafter(value - centre, 1)),
                          texts=False, **FAST))
    assert not above["alarm"] and above["status"] == "no change"
    down = f_row(compare(hist[-1], run_of("n", {"A": [0.39] * len(BASE)}), history=hist, texts=False, **FAST))
    assert down["alarm"] and down["status"] == "moved down"


def test_the_drawn_band_stays_on_the_scale_of_rouge():
    hist = [run_of(f"h{j}", {"A": [m] * 8}, time=f"2026-08-{10 + j:02d}") for j, m in
            enumerate([0.99, 0.6, 0.999, 0.7, 0.98, 0.02, 0.5])]
    r = f_row(compare(hist[-1], run_of("n", {"A": [0.9] * 8}), history=hist, texts=False, **FAST))
    assert r["band"] == "history" and r["band_low"] == 0.0 and r["band_high"] == 1.0


def test_too_few_examples_is_inconclusive_not_no_change():
    """Four verdicts: with 3 examples no sign test can reach the night's level; the row says
    'inconclusive' (its smallest detectable move is unbounded), and so does the run."""
    hist = [run_of(f"h{j}", {"A": [0.4, 0.5, 0.6]}, time=f"2026-08-{10 + j:02d}") for j in range(6)]
    res = compare(hist[-1], run_of("n", {"A": [0.4, 0.5, 0.6]}), history=hist, alpha=0.0001, texts=False, **FAST)
    r = f_row(res)
    assert r["band"] == "history" and r["status"] == "inconclusive" and r["detectable"] is None
    assert res["verdict"] == "inconclusive" and res["inconclusive"] and not res["moved"]


def test_history_of_other_settings_is_left_out_of_the_band():
    hist = _history([0.40, 0.41, 0.39, 0.40, 0.42, 0.38])
    hist[1].info["signature"] = SIG + "|stem:porter"
    res = compare(hist[-1], run_of("n", {"A": [0.40] * 8}), history=hist, texts=False, **FAST)
    assert f_row(res)["band_runs"] == 5 and res["verdict"] == "no change"
    assert any("1 history run(s) made with other settings" in n for n in res["notes"])
    assert [r["url"] for r in res["trend"]["runs"]] == ["h0", "h2", "h3", "h4", "h5", "n"]


def test_too_little_history_falls_back_to_the_bootstrap_band():
    hist = _history([0.40, 0.41, 0.39, 0.40])                    # 4 < min_history 5
    res = compare(hist[-1], run_of("n", {"A": [0.40] * 8}), history=hist, texts=False, **FAST)
    assert f_row(res)["band"] == "bootstrap" and res["verdict"] == "no change"
    assert "fewer than 5 history runs" in cli_band_text(res)


def cli_band_text(res):
    from pipeline.gate.format import band_text

    return band_text(res)


def test_replicates_give_the_run_to_run_band():
    base = run_of("b", {"A": [0.40] * 8})
    reps = [run_of(f"r{j}", {"A": [m] * 8}) for j, m in enumerate([0.41, 0.39, 0.405])]
    vals = np.array([0.40, 0.41, 0.39, 0.405])
    hi = vals.mean() + 4 * vals.std(ddof=1)
    quiet = f_row(compare(base, run_of("n", {"A": [hi - 1e-4] * 8}), replicates=reps, texts=False, **FAST))
    loud = f_row(compare(base, run_of("n", {"A": [hi + 1e-4] * 8}), replicates=reps, texts=False, **FAST))
    assert quiet["band"] == loud["band"] == "replicates" and loud["band_runs"] == 4
    assert not quiet["alarm"] and loud["alarm"] and loud["status"] == "moved up"


# ----------------------------------------------------------------------------- real outputs
@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not HAVE_DATA:
        pytest.skip(DATA_REASON)
    root = tmp_path_factory.mktemp("real")
    out = {"root": root}
    for ds, system, other in (("newsroom", "textrank", "abstractive"), ("dialsummeval", "F:BART", "C:LEAD_3")):
        recs = records(ds)
        base = score(write(root / ds / "base.jsonl", recs), root / ds / "b")
        out[ds] = {"recs": recs, "system": system, "base": base}
        for kind in ("truncation", "header", "padding"):
            bad, _ = injected(recs, kind, systems={system})
            out[ds][kind] = score(write(root / ds / f"{kind}.jsonl", bad), root / ds / kind)
        out[ds]["swap"] = score(write(root / ds / "swap.jsonl", swapped(recs, system, other)), root / ds / "swap")
    return out


@needs_data
@pytest.mark.parametrize("ds", ["newsroom", "dialsummeval"])
@pytest.mark.parametrize("kind", ["truncation", "header", "padding", "swap"])
def test_real_regressions_alarm_on_exactly_the_system_that_moved(real, ds, kind):
    d = real[ds]
    res = compare(load_run(str(d["base"])), load_run(str(d[kind])), texts=False, **FAST)
    assert res["verdict"] == "moved", res["reasons"]
    assert {r["system"] for r in res["rows"] if r["alarm"]} == {d["system"]}
    assert all(m["system"] == d["system"] for m in res["movers"])


@needs_data
def test_identical_rerun_is_quiet_and_the_cli_statuses(real, tmp_path, capsys):
    d = real["newsroom"]
    again = score(write(tmp_path / "again.jsonl", d["recs"]), tmp_path / "again")
    assert cli.main(["compare", str(d["base"]), str(again), "--n-boot", "200", "--n-perm", "200"]) == 0
    assert "no change: inside the band" in capsys.readouterr().out   # identical outputs: every delta is 0
    # 50% and 0% coverage through the command: exit 3 with the reason
    half = [r for r in d["recs"] if int(r["doc_id"]) % 2 == 0 or r["system"] != "lede3"]
    half_run = score(write(tmp_path / "half.jsonl", half), tmp_path / "half")
    none = [{**r, "id": "other:" + r["id"]} for r in d["recs"]]
    none_run = score(write(tmp_path / "none.jsonl", none), tmp_path / "none")
    for run, pct in ((half_run, "coverage "), (none_run, "coverage 0.0%")):
        html = tmp_path / "nc.html"
        assert cli.main(["compare", str(d["base"]), str(run), "--n-boot", "100", "--n-perm", "100",
                         "--html", str(html)]) == 3
        cap = capsys.readouterr()
        assert "NOT COMPARABLE" in cap.out and pct in cap.err and "below --min-coverage" in cap.err
        text = html.read_text()
        assert 'id="verdict">NOT COMPARABLE' in text and "inside the band" not in text and pct in text
    n_lede = sum(r["system"] == "lede3" for r in half)
    assert cli.main(["compare", str(d["base"]), str(half_run), "--min-coverage", str(n_lede / 60)]) in (0, 1)
    capsys.readouterr()
    # different settings: exit 3, then allowed
    stem = score(write(tmp_path / "stem.jsonl", d["recs"]), tmp_path / "stem", "scoring.use_stemmer=true")
    assert cli.main(["compare", str(d["base"]), str(stem), "--n-boot", "100", "--n-perm", "100"]) == 3
    assert "stem:" in capsys.readouterr().err
    assert cli.main(["compare", str(d["base"]), str(stem), "--allow-different-settings", "--n-boot", "100",
                     "--n-perm", "100"]) in (0, 1)


@needs_data
def test_seven_noisy_nights_stay_quiet_and_a_real_shift_alarms(real, tmp_path):
    """Nights of the same build with realistic sampling noise: 3% of each system's candidates are
    another system's output for the same document, drawn anew each night."""
    recs = real["newsroom"]["recs"]
    nights = tmp_path / "nightly"
    for j in range(8):
        score(write(tmp_path / f"n{j}.jsonl", resampled(recs, 0.03, seed=j)), nights / f"2026-08-{10 + j:02d}")
    history = [load_run(str(nights / f"2026-08-{10 + j:02d}")) for j in range(7)]
    quiet = compare(history[-1], load_run(str(nights / "2026-08-17")), history=history, texts=False, **FAST)
    assert {r["band"] for r in quiet["rows"] if r["stat"] == "fmeasure"} == {"history"}
    assert quiet["verdict"] == "no change", quiet["reasons"]
    bad, _ = injected(resampled(recs, 0.03, seed=7), "truncation", every=1, systems={"textrank"})
    shifted = score(write(tmp_path / "bad.jsonl", bad), nights / "2026-08-18")
    res = compare(history[-1], load_run(str(shifted)), history=history, texts=False, **FAST)
    assert res["verdict"] == "moved" and {r["system"] for r in res["rows"] if r["alarm"]} == {"textrank"}
    assert all(r["status"] == "moved down" for r in res["rows"] if r["alarm"])


@needs_data
def test_history_from_a_nightly_root_and_previous(real, tmp_path, capsys, monkeypatch):
    recs = real["newsroom"]["recs"]
    root = tmp_path / "root"
    for j in range(6):
        score(write(tmp_path / f"n{j}.jsonl", recs), root / f"2026-09-0{j + 1}")
    (root / "2026-09-09").mkdir()                       # an unfinished night is ignored
    new = str(root / "2026-09-06")
    for flags in (["--history", str(root)], ["--history", str(root / "2026-09-0*")], ["--previous"]):
        assert cli.main(["compare", new, *flags, "--json", "--n-boot", "100", "--n-perm", "100"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert [r["url"] for r in doc["trend"]["runs"]] == [str(root / f"2026-09-0{j + 1}") for j in range(6)]
        assert doc["base"] == str(root / "2026-09-05")
        assert {r["band"] for r in doc["rows"] if r["stat"] == "fmeasure"} == {"history"}
    # relative paths: the new run itself is never part of its own history
    monkeypatch.chdir(tmp_path)
    assert cli.main(["compare", "root/2026-09-06", "--history", "root", "--json", "--n-boot", "50",
                     "--n-perm", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["trend"]["runs"]) == 6 and doc["chart"][0]["n_runs"] == 5


@needs_data
def test_movers_texts_resolve_a_relative_input_from_the_runs_record(tmp_path, monkeypatch):
    recs = records()
    work = tmp_path / "work"
    write(work / "in" / "base.jsonl", recs)
    bad, _ = injected(recs, "truncation", systems={"lede3"})
    write(work / "in" / "new.jsonl", bad)
    monkeypatch.chdir(work)
    a = score("in/base.jsonl", tmp_path / "a")
    b = score("in/new.jsonl", tmp_path / "b")
    monkeypatch.chdir(tmp_path)                          # elsewhere: in/ does not exist here
    assert not os.path.exists("in/base.jsonl")
    res = compare(load_run(str(a)), load_run(str(b)), **FAST)
    assert res["texts_error"] is None and res["movers"][0]["new_candidate"] and res["movers"][0]["base_candidate"]


def test_the_empty_system_is_shown_one_way_everywhere(tmp_path):
    from pipeline.cli.main import format_stats_table
    from pipeline.gate.format import format_result
    from pipeline.gate.report import compare_report

    base = run_of("b", {"": BASE})
    new = run_of("n", {"": [v - 0.1 for v in BASE]})
    res = compare(base, new, texts=False, **FAST)
    text, html = format_result(res), compare_report(res, base, new)
    table = format_stats_table([{"system": "", "type": "rouge1", "stat": s, "count": 8, "mean": 0.4, "std": 0.1,
                                 "ci_low": 0.3, "ci_high": 0.5} for s in ("precision", "recall", "fmeasure")])
    for out in (text, html, table, "; ".join(res["reasons"])):
        assert "(no system)" in out
        assert '""' not in out and "[]" not in out and "system=" not in out
    assert res["rows"][0]["system"] == ""                     # the data keep the value


def test_the_recorded_false_alarm_rate_is_the_history_bands_only(tmp_path):
    """_gate.json states the nightly false-alarm rate only when some row was judged against its
    history (the sign test that rate belongs to); the paired-bootstrap band has no such rate."""
    from pipeline.gate.control import record_verdict

    hist = _noisy_history()
    new = run_of("n", {"A": BIG})
    new.url = str(tmp_path)
    with_history = record_verdict(new, compare(hist[-1], new, history=hist, texts=False, **FAST))
    assert with_history["false_alarm_rate"] == 0.01
    assert json.loads((tmp_path / "_gate.json").read_text())["false_alarm_rate"] == 0.01
    bootstrap = record_verdict(new, compare(hist[-1], new, texts=False, **FAST))
    assert bootstrap["false_alarm_rate"] is None
