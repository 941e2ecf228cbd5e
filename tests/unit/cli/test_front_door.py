"""The front door never misleads (issue 28): secrets stay out of every line, even escaped twice or
in a ``--set`` that does not parse; YAML is read by the 1.2 core schema (``no`` is Norwegian)."""
from __future__ import annotations

import json

import pytest

from pipeline.cli.main import main
from pipeline.config import load_config, parse_override
from pipeline.errors import ConfigError
from pipeline.redaction import REDACTED, Redactor, redact_url

SECRET = "Sup3r'se\"cr\\et"    # a quote of each kind and a backslash


@pytest.mark.parametrize("form", [
    lambda s: json.dumps(repr(s)),                 # a JSON message quoting a repr
    lambda s: repr(json.dumps(s)),                 # a repr of a JSON document
    lambda s: json.dumps({"error": "x " + json.dumps(s)}),
])
def test_a_secret_escaped_twice_is_masked(form):
    text = Redactor([SECRET]).text("failed: " + form(SECRET))
    assert "Sup3r" not in text and "cr\\" not in text and REDACTED in text, text


def test_an_azure_password_holding_an_at_sign_is_not_kept():
    url = "abfs://user:p@ssw0rd@account.dfs.core.windows.net/x"
    assert redact_url(url) == f"abfs://{REDACTED}@account.dfs.core.windows.net/x"
    red = Redactor().add_config({"output": {"url": url}})
    assert "ssw0rd" not in red.text(f"cannot write {url}: denied")
    # a container name (no password) stays, and so does an '@' in a path
    assert redact_url("abfs://container@acct.dfs.core.windows.net/x@v2") == \
        "abfs://container@acct.dfs.core.windows.net/x@v2"


def test_a_malformed_set_does_not_echo_its_value(capsys):
    bad = 'storage_options={"key": "AKIAWHATEVER", "secret": "wJalrXUtn\'FEMI'   # an unclosed quote
    with pytest.raises(ConfigError) as e:
        parse_override(bad)
    assert "wJalr" not in str(e.value) and "storage_options" in str(e.value)
    status = main(["score", "configs/sample/part-0.jsonl", "-o", "/nonexistent/x", "--set", bad])
    err = capsys.readouterr().err
    assert status == 2 and "wJalr" not in err and "AKIAWHATEVER" not in err, err
    assert err.count("\n") == 1 and "--set storage_options=" in err


def test_yaml_is_read_by_the_1_2_core_schema(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: {paths: a.jsonl}\noutput: {url: out}\n"
                   "scoring: {profile: unicode, language: no}\nstats: {n_boot: 10, seed: 010}\n")
    (tmp_path / "a.jsonl").write_text("")
    c = load_config(str(cfg))
    assert c.scoring.language == "no"      # Norwegian, not False
    assert c.stats.seed == 10              # decimal, not octal 8
    _, v = parse_override("scoring.language=no")
    assert v == "no"
    _, v = parse_override("stats.seed=0o17")
    assert v == 15


def test_nightly_reads_its_job_file_by_the_1_2_core_schema(tmp_path):
    from pipeline.cli.nightly import _read_job

    job = tmp_path / "job.yaml"
    job.write_text("name: gate\nconfig: c.yaml\nschedule: '30 2 * * *'\noutput_root: runs\n"
                   "compare: {baseline: 2026-08-14, allow_different_settings: off}\n")
    got = _read_job(str(job))["compare"]
    assert got == {"baseline": "2026-08-14", "allow_different_settings": "off"}
