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

from _newsroom_runs import injected, records, score, write
from pipeline import cli

ARTIFACTS = Path(__file__).parent / "artifacts"
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
    return {"run": run_html, "compare": cmp_html, "root": root}


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
    assert "reference 1:" in text and "Ids in one run only" in text


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
@pytest.mark.parametrize("which", ["compare", "run"])
def test_report_in_headless_chromium(reports, tmp_path, which):
    html = reports[which]
    png = tmp_path / f"{which}.png"
    shot = _chromium(html.as_uri(), tmp_path, f"--screenshot={png}", "--window-size=1280,2000")
    assert png.exists() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = _chromium(html.as_uri(), tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the figures exist in the rendered DOM
    assert dom.stdout.count("<svg") == 7 * 4 and dom.stdout.count("<rect") > 7 * 4
    for log in (shot.stderr, dom.stderr):
        bad = [l for l in log.splitlines() if "Uncaught" in l or "CONSOLE(" in l
               or "Refused to" in l or "ERR_" in l]
        assert not bad, bad
    ARTIFACTS.mkdir(exist_ok=True)
    name = "report.png" if which == "run" else "compare.png"
    shutil.copyfile(png, ARTIFACTS / name)
    print(f"screenshot: {ARTIFACTS / name} (and {png})")
