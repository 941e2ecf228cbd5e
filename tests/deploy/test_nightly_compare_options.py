"""Issue 27: every option of a nightly job file's ``compare:`` section reaches ``compare`` with its
value -- the gate's ``alpha`` and ``baseline`` too, a ``0`` as a value, and a value ``compare`` would
refuse refused when the job file is read, never dropped.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.cli import nightly
from pipeline.cli.main import _parser, main


def _nightly_job(root: Path, compare: dict) -> Path:
    (root / "score.yaml").write_text("input: {layout: records, paths: x.jsonl}\n")
    job = root / "nightly.yaml"
    job.write_text(yaml.safe_dump({"name": "gate", "config": "score.yaml", "output_root": str(root / "nightly"),
                                   "compare": compare}))
    return job


_VALUES = {"band": 0, "min_effect": 0, "min_coverage": 0, "k": 2.5, "window": 1, "min_history": 2,
           "method": "mad", "alpha": 0.05, "baseline": "s3://bucket/release/run-1.2",
           "allow_different_settings": True}
_DEST = {"method": "band_method"}


def test_every_compare_option_of_the_job_reaches_compare_with_its_value():
    import jsonschema

    props = nightly.schema()["properties"]["compare"]["oneOf"][1]["properties"]
    assert set(props) == set(nightly.COMPARE_FLAGS) == set(_VALUES)
    job = {"name": "gate", "config": "score.yaml", "output_root": "/runs/n", "compare": dict(_VALUES)}
    assert nightly.schema_errors(job, nightly.schema()) == []
    jsonschema.validate(job, nightly.schema())
    args = _parser().parse_args(nightly.compare_argv(job, "/runs/n/2026-08-15"))
    for key, value in _VALUES.items():
        assert getattr(args, _DEST.get(key, key)) == value, key
    assert args.previous and args.runs == ["/runs/n/2026-08-15"]
    # falsy values are values (0), only a missing key or false leaves a flag out
    args = _parser().parse_args(nightly.compare_argv({**job, "compare": {"allow_different_settings": False}}, "/r/d"))
    assert args.allow_different_settings is False and args.band is None and args.alpha is None


def test_a_baseline_date_is_that_nights_folder_and_a_url_is_kept(tmp_path, capsys):
    job = {"name": "gate", "config": "score.yaml", "output_root": "s3://b/nightly/", "compare": {"baseline": "2026-08-01"}}
    argv = nightly.compare_argv(job, "s3://b/nightly/2026-08-15")
    assert argv[argv.index("--baseline") + 1] == "s3://b/nightly/2026-08-01"
    with pytest.raises(ValueError, match="one folder name"):
        nightly.compare_argv({**job, "compare": {"baseline": ".."}}, "s3://b/nightly/2026-08-15")
    path = _nightly_job(tmp_path, {"alpha": 0.02, "baseline": "2026-08-01", "band": 0})
    assert main(["nightly", str(path), "--date", "2026-08-15", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f" --alpha 0.02 --baseline {tmp_path / 'nightly' / '2026-08-01'} " in out and " --band 0 " in out


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.01, "0.01"])
def test_an_alpha_compare_would_refuse_is_refused_by_the_job_file_not_dropped(tmp_path, capsys, alpha):
    import jsonschema

    job = {"name": "gate", "config": "score.yaml", "output_root": "/runs/n", "compare": {"alpha": alpha}}
    assert nightly.schema_errors(job, nightly.schema())
    assert list(jsonschema.Draft202012Validator(nightly.schema()).iter_errors(job))
    path = _nightly_job(tmp_path, {"alpha": alpha})
    assert main(["nightly", str(path), "--date", "2026-08-15", "--dry-run"]) == 2
    assert "compare.alpha" in capsys.readouterr().err




def test_the_deployment_doc_says_what_the_first_inconclusive_nights_look_like_and_how_to_avoid_them():
    import re

    doc = (Path(__file__).parents[2] / "docs" / "deployment.md").read_text()
    section = doc.split("### The first nights of a new deployment", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    for platform in ("cron", "Kubernetes CronJob", "Kubernetes DaskJob", "Slurm", "webhook"):
        assert f"| {platform}" in section, platform
    assert "exit 4" in section and "podFailurePolicy" in section and "--mail-type=FAIL" in section
    snippets = re.findall(r"`compare: (\{[^`]*\})`", section)
    assert len(snippets) >= 2
    for snippet in snippets:    # every suggested setting is a valid job file
        job = {"name": "gate", "config": "score.yaml", "output_root": "/runs/n", "compare": yaml.safe_load(snippet)}
        assert nightly.schema_errors(job, nightly.schema()) == [], snippet
