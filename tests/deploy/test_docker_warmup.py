"""Issue 27, item 8: the image's warmup compiles the copy of the package the console scripts load.

numba caches per source path (and the warmup's stamp is keyed by the package's path and files):
a warmup that imports ``/app/pipeline`` while ``rouge-pipeline`` and ``dask worker`` import the
installed copy in site-packages compiles for nothing, and every pod compiles again (84-88 s).

No Docker engine here: the Dockerfile's instructions are replayed on a scratch root -- its COPYs,
the ``pip install`` (a copy of the source into a ``site-packages``, as a non-editable install
makes), the ``rm -rf`` of the same RUN, and the warmup command with its working directory and
Python flags -- and the warmup's import is compared with a console script's: the same file, the
same warmup stamp.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]
PROBE = ("import pipeline.execution.warmup as w, sys; print(w.__file__); print(w._stamp_path()); "
         "print(sys.modules['pipeline'].__file__)")


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)``, continuation lines joined, comments dropped."""
    out, buf = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        buf += line.rstrip()
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        if buf.strip():
            word, _, rest = buf.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def _in_image(root: Path, path: str, workdir: str) -> Path:
    path = path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"
    return root / path.lstrip("/")


def replay(dockerfile: Path, root: Path) -> dict:
    """Replay the Dockerfile's file operations on ``root``; what the warmup RUN runs, and where."""
    site = root / "usr/local/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    workdir, env, warm = "/", {}, None
    for word, args in instructions(dockerfile.read_text()):
        if word == "WORKDIR":
            workdir = args if args.startswith("/") else f"{workdir.rstrip('/')}/{args}"
            _in_image(root, workdir, "/").mkdir(parents=True, exist_ok=True)
        elif word == "ENV":
            env.update(dict(re.findall(r"(\w+)=(\S+)", args)))
        elif word == "COPY":
            *srcs, dst = shlex.split(args)
            target = _in_image(root, dst, workdir)
            for src in srcs:
                source = REPO / src
                into = target / source.name if dst.endswith("/") else target
                into.parent.mkdir(parents=True, exist_ok=True)
                if source.is_dir():
                    shutil.copytree(source, into, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(source, into)
        elif word == "RUN":
            cwd = workdir
            for step in (s.strip() for s in args.split("&&")):
                argv = shlex.split(step)
                if argv[:2] == ["pip", "install"]:
                    src = argv[-1].split("[")[0]
                    pkg = _in_image(root, src, cwd) / "pipeline"
                    assert pkg.is_dir(), f"pip install {src}: no pipeline/ there in the image"
                    shutil.copytree(pkg, site / "pipeline")           # a non-editable install: a copy
                elif argv[:2] == ["rm", "-rf"]:
                    for p in argv[2:]:
                        shutil.rmtree(_in_image(root, p, cwd), ignore_errors=True)
                elif argv and argv[0] == "cd":
                    cwd = argv[1] if argv[1].startswith("/") else f"{cwd.rstrip('/')}/{argv[1]}"
                elif "pipeline.execution.warmup" in argv:
                    warm = {"cwd": cwd, "flags": argv[1:argv.index("-m")]}
    assert warm is not None, "the Dockerfile runs no warmup"
    return {"site": site, "workdir": workdir, "env": env, "warm": warm}


def _python(argv, cwd: Path, site: Path, cache: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "NUMBA"))}
    env.update(PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def imports_of(dockerfile: Path, root: Path) -> tuple[list[str], list[str]]:
    """(what the warmup imports, what a console script imports) in the replayed image."""
    img = replay(dockerfile, root)
    site, cache = img["site"], root / "opt/numba-cache"
    warm = _python([*img["warm"]["flags"], "-c", PROBE], _in_image(root, img["warm"]["cwd"], "/"), site, cache)
    scripts = root / "usr/local/bin"
    scripts.mkdir(parents=True)
    (scripts / "rouge-pipeline").write_text(PROBE + "\n")   # pip's script: sys.path[0] is its folder
    console = _python([str(scripts / "rouge-pipeline")], _in_image(root, img["workdir"], "/"), site, cache)
    return warm, console


def test_the_warmup_compiles_the_installed_copy_the_console_scripts_load(tmp_path):
    warm, console = imports_of(REPO / "docker/Dockerfile", tmp_path / "image")
    site = str(tmp_path / "image/usr/local/lib/python3.11/site-packages")
    assert console[0].startswith(site), console                 # the console script: the installed copy
    assert warm == console                                        # same source files, same warmup stamp
    assert not (tmp_path / "image/app/pipeline").exists()        # one copy of the code in the image


def test_the_replay_catches_a_warmup_of_the_source_copy(tmp_path):
    """Today's main: the source copied to /app, installed from there, warmed from /app."""
    old = (REPO / "docker/Dockerfile").read_text()
    old = re.sub(r"COPY pyproject.toml README.md /tmp/src/\nCOPY pipeline /tmp/src/pipeline\n",
                 "COPY pyproject.toml README.md ./\nCOPY pipeline ./pipeline\n", old)
    old = old.replace('pip install "/tmp/src[s3,gcs]"', 'pip install ".[s3,gcs]"').replace(" -P -m ", " -m ")
    assert "COPY pipeline ./pipeline" in old and 'pip install ".[s3,gcs]"' in old
    path = tmp_path / "Dockerfile"
    path.write_text(old)
    warm, console = imports_of(path, tmp_path / "image")
    assert warm[0].startswith(str(tmp_path / "image/app/pipeline")) and warm != console
