"""Issue #18: system vs system on the same documents (``compare RUN --systems BASELINE,A,B``).

The p-values, intervals and Holm corrections equal a direct NumPy computation of their definitions
written here (the Poisson weights from poisson.weights_reference, the signs from the splitmix64
stream computed with Python integers), and are byte-identical when the run was scored by 1 or 2
Dask worker processes.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from support.newsroom_runs import DOC_KEY, records, score, write
from support.shared import needs_data
from pipeline.cli import main as cli
from pipeline.gate.runs import CompareError, load_run
from pipeline.gate.significance import doc_keys, holm, significance
from pipeline.stats import poisson

pytestmark = needs_data
SYSTEMS = ["lede3", "pointer_c", "textrank", "abstractive"]
N_BOOT, N_TRIALS, SEED = 400, 1500, 777


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sig")
    recs = records()
    data = write(root / "in.jsonl", recs)
    out = {"sync": score(data, root / "sync")}
    for n in (1, 2):
        out[n] = score(data, root / f"w{n}", "execution.mode=local", f"execution.n_workers={n}",
                       "execution.target_rows=50")
    return out


def _signs(bases, n_trials):
    """The definition: +1 iff the top bit of u_r = mix64(base + (r + 1) * GAMMA) is set."""
    out = np.empty((n_trials, len(bases)))
    for i, b in enumerate(int(x) for x in bases):
        for r in range(n_trials):
            u = poisson.mix64_int((b + (r + 1) * poisson.GAMMA) & poisson.M64)
            out[r, i] = 1.0 if u >> 63 else -1.0
    return out


def _holm(p):
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, (m - np.arange(m)) * np.asarray(p)[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(adj)
    return out


def test_pvalues_and_intervals_equal_their_definition(runs):
    run = load_run(str(runs["sync"]))
    res = significance(run, run, SYSTEMS, stats=("fmeasure", "recall"), doc_key=DOC_KEY, n_boot=N_BOOT,
                       n_trials=N_TRIALS, seed=SEED)
    df = run.scores
    assert res["comparable"] and len(res["rows"]) == 3 * 4 * 2
    for t in ("rouge1", "rougeL"):
        for stat in ("fmeasure", "recall"):
            col = f"{t}_{stat}"
            fam = [r for r in res["rows"] if r["type"] == t and r["stat"] == stat]
            assert [r["system"] for r in fam] == SYSTEMS[1:]
            base = df[df["system"] == "lede3"].assign(doc=lambda g: g["id"].str.rsplit(":", n=1).str[0])
            p_bs, p_ar = [], []
            for r in fam:
                other = df[df["system"] == r["system"]].assign(doc=lambda g: g["id"].str.rsplit(":", n=1).str[0])
                m = base.merge(other, on="doc", suffixes=("_b", "_s")).sort_values("doc")
                docs = m["doc"].tolist()
                b, x = m[f"{col}_b"].to_numpy(), m[f"{col}_s"].to_numpy()
                d = x - b
                bases = poisson.example_bases(docs, SEED)
                w = poisson.weights_reference(bases, N_BOOT)                     # (n_boot, n)
                rep = (w @ d) / w.sum(axis=1)
                delta = d.mean()
                tol = 1e-12 * max(1.0, np.abs(d).max())
                want_bs = (1 + np.sum(np.abs(rep - rep.mean()) >= abs(delta) - tol)) / (1 + N_BOOT)
                s = _signs(bases, N_TRIALS)
                want_ar = (1 + np.sum(np.abs(s @ d / len(d)) >= abs(delta) - tol)) / (1 + N_TRIALS)
                assert r["n_docs"] == len(docs) == 60
                assert r["delta"] == pytest.approx(delta, abs=1e-15)
                assert r["p_bootstrap"] == want_bs and r["p_ar"] == want_ar, (r["system"], t, stat)
                np.testing.assert_allclose(r["delta_ci"], np.quantile(rep, [0.025, 0.975]), rtol=0, atol=1e-14)
                np.testing.assert_allclose(r["system_ci"], np.quantile((w @ x) / w.sum(axis=1), [0.025, 0.975]),
                                           rtol=0, atol=1e-14)
                assert r["baseline_mean"] == pytest.approx(b.mean(), abs=1e-15)
                p_bs.append(want_bs)
                p_ar.append(want_ar)
            assert [r["p_bootstrap_holm"] for r in fam] == pytest.approx(list(_holm(p_bs)), abs=0)
            assert [r["p_ar_holm"] for r in fam] == pytest.approx(list(_holm(p_ar)), abs=0)
    # abstractive is far below lede3 on every type; textrank is not distinguishable on rouge1
    by = {(r["system"], r["type"], r["stat"]): r for r in res["rows"]}
    assert by[("abstractive", "rouge1", "fmeasure")]["significant"]
    assert by[("abstractive", "rouge1", "fmeasure")]["delta_ci"][1] < 0
    assert not by[("textrank", "rouge1", "fmeasure")]["significant"]


def test_holm_definition():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.9, 0.8]) == [1.0, 1.0] and holm([0.9, 0.4]) == [0.9, 0.8]


def test_byte_identical_with_1_and_2_workers(runs):
    out = []
    for key in (1, 2, "sync"):
        run = load_run(str(runs[key]))
        res = significance(run, run, SYSTEMS, doc_key=DOC_KEY, n_boot=N_BOOT, n_trials=N_TRIALS, seed=SEED)
        res.pop("base"), res.pop("new")
        out.append(json.dumps(res, sort_keys=True).encode())
    assert out[0] == out[1] == out[2]
    # and the row order of the score files differs between the runs (so the test means something)
    a, b = load_run(str(runs[1])).scores["id"].tolist(), load_run(str(runs[2])).scores["id"].tolist()
    assert sorted(a) == sorted(b)
    # another seed gives other numbers
    run = load_run(str(runs[1]))
    other = significance(run, run, SYSTEMS, doc_key=DOC_KEY, n_boot=N_BOOT, n_trials=N_TRIALS, seed=SEED + 1)
    assert [r["p_ar"] for r in other["rows"]] != [r["p_ar"] for r in json.loads(out[0])["rows"]]


def test_cli_table_json_html_and_two_runs(runs, tmp_path, capsys):
    run = str(runs["sync"])
    html = tmp_path / "sig.html"
    args = ["compare", run, "--systems", ",".join(SYSTEMS), "--doc-key", DOC_KEY, "--n-boot", "200",
            "--n-perm", "500", "--html", str(html)]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "Baseline: lede3" in out and "(p = " in out and "rougeL F (mean, 95% CI)" in out and "Holm" in out
    text = html.read_text()
    assert "<script" not in text and "Baseline: lede3" in text and "p AR (Holm)" in text
    assert cli.main(args[:-2] + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # across two runs: the baseline from the first, the systems from the second (here the same outputs)
    assert cli.main(["compare", str(runs[1]), str(runs[2]), "--systems", ",".join(SYSTEMS), "--doc-key", DOC_KEY,
                     "--n-boot", "200", "--n-perm", "500", "--json"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["rows"] == doc["rows"]


def test_the_document_key(runs, capsys):
    # ids carry the system here, so the default key (the id) finds no common document: not comparable
    assert cli.main(["compare", str(runs["sync"]), "--systems", "lede3,textrank", "--n-boot", "10",
                     "--n-perm", "10"]) == 3
    err = capsys.readouterr().err
    assert "share no document" in err and "--doc-key" in err
    assert doc_keys(["newsroom:12:lede3", "newsroom:7:lede3"], "lede3", DOC_KEY) == ["newsroom:12", "newsroom:7"]
    assert doc_keys(["a", "b"], "x", None) == ["a", "b"]
    # {system} is escaped: a name with regex characters
    assert doc_keys(["d1:F:BART(x)"], "F:BART(x)", DOC_KEY) == ["d1"]
    with pytest.raises(CompareError, match="does not match id"):
        doc_keys(["newsroom:12:lede3"], "textrank", DOC_KEY)
    with pytest.raises(CompareError, match="needs a group"):
        doc_keys(["a"], "x", ".*")
    run = load_run(str(runs["sync"]))
    with pytest.raises(CompareError, match="several examples of document"):
        significance(run, run, ["lede3", "textrank"], doc_key=r"(newsroom):")
    with pytest.raises(CompareError, match="not in"):
        significance(run, run, ["lede3", "nosuch"], doc_key=DOC_KEY)
    assert cli.main(["compare", str(runs["sync"]), "--systems", "lede3", "--n-boot", "10"]) == 2
    assert "at least one system" in capsys.readouterr().err
