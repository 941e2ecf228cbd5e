"""The single-file HTML reports: offline (no script, no external URL), figures present, and
rendered in a real headless browser (Debian's chromium) without console errors.

The screenshots are kept as test artifacts in tests/artifacts/ (git-ignored)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from support.newsroom_runs import DOC_KEY, injected, records, resampled, score, write
from pipeline.cli import main as cli

ARTIFACTS = Path(__file__).parents[2] / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    recs = records()
    base = score(write(root / "in" / "base.jsonl", recs), root / "base")
    bad, _ = injected(recs, "truncation")
    new = score(write(root / "in" / "new.jsonl", bad), root / "new")
    run_html, cmp_html = root / "report.html", root / "compare.html"
    assert cli.main(["report", str(base), "-o", str(run_html)]) == 0
    assert cli.main(["compare", str(base), str(new), "--html", str(cmp_html), "--n-boot", "300",
                     "--n-perm", "300"]) == 1
    # a history: five nights of the same outputs, then the truncation
    nights = root / "nightly"
    for j in range(5):
        score(write(root / "in" / f"n{j}.jsonl", resampled(recs, 0.02, seed=j)), nights / f"2026-08-1{j}")
    score(write(root / "in" / "new.jsonl", bad), nights / "2026-08-15")
    hist_html = root / "history.html"
    assert cli.main(["compare", str(nights / "2026-08-15"), "--previous", "--html", str(hist_html), "--n-boot",
                     "200", "--n-perm", "200"]) == 1
    trend_html = root / "trend.html"
    assert cli.main(["report", str(nights / "2026-08-15"), "--history", str(nights), "-o", str(trend_html)]) == 0
    sig_html = root / "significance.html"
    assert cli.main(["compare", str(base), "--systems", "lede3,pointer_c,textrank,abstractive", "--doc-key", DOC_KEY,
                     "--html", str(sig_html), "--n-boot", "200", "--n-perm", "500"]) == 0
    return {"run": run_html, "compare": cmp_html, "history": hist_html, "trend": trend_html,
            "significance": sig_html, "root": root}


def _offline(text: str) -> None:
    assert "<script" not in text.lower()
    assert not re.search(r"""(src|href)\s*=""", text, re.I), "the report must not load anything"
    assert "url(" not in text and "@import" not in text
    # the only URL is the SVG namespace (a name, never fetched)
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) <= {"http://www.w3.org/2000/svg"}


def test_run_report_content(reports):
    text = reports["run"].read_text(encoding="utf-8")
    _offline(text)
    assert text.count('<svg xmlns="http://www.w3.org/2000/svg" class="hist"') == 7 * 4   # systems x types
    assert 'id="signature">rouge:1,2,L,Lsum|' in text and "95% CI" in text
    assert "diag_coverage" in text and "diag_repeat_3gram" in text and "lede3" in text


def test_compare_report_content(reports):
    text = reports["compare"].read_text(encoding="utf-8")
    _offline(text)
    assert 'id="verdict">MOVED' in text and "ALARM moved down" in text
    assert text.count('class="hist"') == 7 * 4 and text.count('class="mover"') == 10
    assert "reference 1 (marked" in text and "Ids in one run only" in text
    assert text.count('<mark class="lcs">') > 50 and "the top 0" not in text


def test_history_report_has_trend_charts_with_the_band_and_the_reason(reports):
    text = reports["history"].read_text(encoding="utf-8")
    _offline(text)
    assert 'id="verdict">MOVED' in text and "Trend of the mean F over the history" in text
    assert text.count('class="trend"') == 7 * 4 and text.count('class="band"') == 7 * 4
    assert "examples&#x27; own history" in text or "examples' own history" in text   # issue 27: the sign test's reason
    # each chart: 5 earlier nights and the new one
    first = text[text.index('class="trend"'):]
    first = first[:first.index("</svg>")]
    assert first.count("<circle") == 6


def test_run_report_with_history_draws_the_trend_and_band(reports):
    text = reports["trend"].read_text(encoding="utf-8")
    _offline(text)
    assert text.count('class="trend"') == 7 * 4 and text.count('class="band"') == 7 * 4
    assert text.count('class="hist"') == 7 * 4
    plain = reports["run"].read_text(encoding="utf-8")
    assert 'class="trend"' not in plain


def test_no_mover_says_so_not_the_top_0(tmp_path):
    from pipeline.gate.compare import compare
    from pipeline.gate.runs import load_run
    from pipeline.gate.report import compare_report

    base = load_run(str(score(write(tmp_path / "a.jsonl", records()[:14]), tmp_path / "a")))
    res = compare(base, base, n_boot=50, n_perm=50)
    text = compare_report(res, base, base)
    assert "No example changed." in text and "the top 0" not in text


def test_identical_histograms_show_the_legend_colours_side_by_side():
    import numpy as np

    from pipeline.gate.report import COLORS, histogram_svg

    v = np.array([0.1, 0.1, 0.5, 0.55, 0.9])
    svg = histogram_svg([v, v], "same", labels=["base", "new"])
    rects = re.findall(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" fill="(#\w+)" '
                       r'fill-opacity="([\d.]+)"', svg)
    assert len(rects) == 2 * 4 and {r[2] for r in rects} == set(COLORS)
    assert {r[3] for r in rects} == {"0.85"}
    spans = sorted((float(x), float(x) + float(w)) for x, w, _, _ in rects)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "bars must not overlap (blended colours)"


def test_highlight_marks_the_lcs_and_other_matches():
    from pipeline.gate.report import highlight

    out = highlight("The cat sat on the mat, sat.", "the cat on a mat sat")
    # LCS of (the cat sat on the mat sat) and (the cat on a mat sat): the cat on mat sat (5)
    marked = re.findall(r'<mark class="(\w+)">([^<]*)</mark>', out)
    assert [w for c, w in marked if c == "lcs"] == ["The", "cat", "on", "mat,", "sat."]
    assert [w for c, w in marked if c == "uni"] == ["sat", "the"]
    assert highlight("<b>x</b>", "y") == "&lt;b&gt;x&lt;/b&gt;"


def _chromium(url: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0", *args, url]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)          # only the browser we started
        out, err = p.communicate()
        pytest.fail(f"chromium did not finish: {err[-2000:]}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
@pytest.mark.parametrize("which", ["compare", "run", "history", "significance"])
def test_report_in_headless_chromium(reports, tmp_path, which):
    html = reports[which]
    png = tmp_path / f"{which}.png"
    shot = _chromium(html.as_uri(), tmp_path, f"--screenshot={png}", "--window-size=1280,2000")
    assert png.exists() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = _chromium(html.as_uri(), tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the figures exist in the rendered DOM
    if which == "significance":      # tables only: one per rouge type, the significant rows marked
        assert dom.stdout.count("<table>") == 4 and 'class="alarm"' in dom.stdout
    else:
        assert dom.stdout.count("<svg") == 7 * 4 * (2 if which == "history" else 1)
        assert dom.stdout.count("<rect") > 7 * 4
    for log in (shot.stderr, dom.stderr):
        bad = [l for l in log.splitlines() if "Uncaught" in l or "CONSOLE(" in l
               or "Refused to" in l or "ERR_" in l]
        assert not bad, bad
    ARTIFACTS.mkdir(exist_ok=True)
    name = {"run": "report.png", "compare": "compare.png", "history": "compare-history.png",
            "significance": "significance.png"}[which]
    shutil.copyfile(png, ARTIFACTS / name)
    print(f"screenshot: {ARTIFACTS / name} (and {png})")
