"""The README's code runs, so it cannot rot: in a copy of the repository, in document order,
every ```python block runs in a fresh interpreter, and every `rouge-pipeline ...` command of a
```bash block that uses only local files (no URL scheme, no --scheduler) runs, `score` with
--sync. Each must exit 0. A block whose first line contains `# no-test`, or a command line that
contains it, is skipped (for blocks that need a cluster, the cloud or a user's own data).
Blocks added later are covered automatically."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]
FENCE = re.compile(r"^```(\w*)\s*$")
SKIP = "# no-test"


def blocks(text: str) -> list[tuple[int, str, str]]:
    """``(line number, language, code)`` of every fenced block."""
    out, lang, start, buf = [], None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if lang is None and m:
            lang, start, buf = m.group(1), n, []
        elif lang is not None and line.startswith("```"):
            out.append((start, lang, "\n".join(buf)))
            lang = None
        elif lang is not None:
            buf.append(line)
    return out


def cli_commands(code: str) -> list[list[str]]:
    """The local `rouge-pipeline` commands of a bash block, as argument lists."""
    cmds = []
    for line in code.replace("\\\n", " ").splitlines():
        if SKIP in line:
            continue
        for part in line.split("&&"):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            if not words or words[0] != "rouge-pipeline" or "--scheduler" in words:
                continue
            if any("://" in w for w in words):
                continue
            if words[1] == "score":
                words += [w for w in ("--sync", "--no-progress") if w not in words]
            cmds.append(words[1:])
    return cmds


def test_the_parser_finds_commands_and_honours_no_test():
    code = ("pip install -e . && rouge-pipeline score --config c.yaml   # a comment\n"
            "rouge-pipeline show runs/x \\\n    --json\n"
            "rouge-pipeline score --output s3://b/r\nrouge-pipeline compare a b   # no-test\n"
            "dask worker tcp://A:8786\n")
    assert cli_commands(code) == [["score", "--config", "c.yaml", "--sync", "--no-progress"],
                                  ["show", "runs/x", "--json"]]
    text = "x\n```python\nprint(1)\n```\n```yaml\na: 1\n```\n```bash\nrouge-pipeline show r\n```\n"
    assert [(n, lang, code) for n, lang, code in blocks(text)] == [
        (2, "python", "print(1)"), (5, "yaml", "a: 1"), (8, "bash", "rouge-pipeline show r")]


def test_readme_code_runs(tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(REPO, work, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "__pycache__", "artifacts",
                                                              "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUGE_PIPELINE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ran = 0
    for line, lang, code in blocks((REPO / "README.md").read_text(encoding="utf-8")):
        if SKIP in (code.splitlines() or [""])[0]:
            continue
        if lang == "python":
            runs = [[sys.executable, "-c", code]]
        elif lang == "bash":
            runs = [[sys.executable, "-m", "pipeline", *args] for args in cli_commands(code)]
        else:
            continue
        for cmd in runs:
            out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, f"README.md line {line}: {' '.join(cmd[1:])[:200]}\n{out.stderr[-2000:]}"
            ran += 1
    assert ran >= 8, ran          # the Quick start's commands and snippets at least


def test_relative_links_of_the_docs_exist():
    link = re.compile(r"\]\(([^)\s]+)\)")
    missing = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "tests" / "README.md"]:
        for target in link.findall(doc.read_text(encoding="utf-8")):
            path = target.split("#", 1)[0]
            if not path or "://" in path or path.startswith("mailto:"):
                continue
            if not (doc.parent / path).exists():
                missing.append(f"{doc.relative_to(REPO)}: {target}")
    assert missing == []
