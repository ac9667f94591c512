"""What a reader who cites or reuses the package needs (issue 51 item 6): an OSI license, the
corpus's PSF terms beside the corpus, a citation file naming the paper, a changelog whose
newest version is pyproject's, and a non-editable build that runs outside the repository."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER = "One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline Parallel LLM Pretraining"
#: what a build copies from the working tree (everything else: the package's sources and data)
NOT_COPIED = shutil.ignore_patterns(".git", ".venv*", "figs_out", "out", "runs", "build", "*.egg-info",
                                    "__pycache__", ".pytest_cache", ".hypothesis")


def version() -> str:
    """pyproject.toml's [project] version."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_license_is_mit_and_names_the_corpus_terms():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert "gpu_runs/corpora/LICENSE-PSF.txt" in text
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "MIT"


def test_the_corpus_keeps_its_psf_terms_beside_it():
    corpora = ROOT / "gpu_runs" / "corpora"
    assert list(corpora.glob("*.tar.xz")), "the built-in corpus is gone"
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in (corpora / "LICENSE-PSF.txt").read_text()
    readme = " ".join((corpora / "README.md").read_text().split())
    assert "Python Software Foundation License Version 2" in readme and "LICENSE-PSF.txt" in readme


def test_citation_names_the_package_its_version_and_the_paper():
    cff = (ROOT / "CITATION.cff").read_text()
    assert cff.startswith("cff-version: 1.2.0")
    assert re.search(r"^version: (\S+)$", cff, re.M).group(1) == version()
    assert "delayed-lmo" in cff and PAPER in cff and "arXiv:2606.30634" in cff


def test_changelog_newest_version_is_pyprojects():
    heads = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert heads and heads[0] == version(), (heads, version())


def test_a_non_editable_build_lists_the_quick_profile_outside_the_repository(tmp_path):
    """pip builds the package from a copy of the working tree (so the build leaves nothing in the
    checkout) into a target folder, offline; from a folder outside the repository, with only
    that target on PYTHONPATH, ``python -m paper_figs --list`` imports the installed copy and reads
    the kept records it shipped as package data."""
    src, target, elsewhere = tmp_path / "src", tmp_path / "site", tmp_path / "elsewhere"
    shutil.copytree(ROOT, src, ignore=NOT_COPIED)
    elsewhere.mkdir()
    build = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                            "--no-index", "--quiet", "--target", str(target), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    assert (target / "gpu_runs" / "corpora" / "LICENSE-PSF.txt").exists()
    assert list((target / "gpu_runs" / "corpora").glob("*.tar.xz"))
    env = {**os.environ, "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    where = subprocess.run([sys.executable, "-c", "import paper_figs; print(paper_figs.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert Path(where.stdout.strip()).is_relative_to(target), where.stdout + where.stderr
    listed = subprocess.run([sys.executable, "-m", "paper_figs", "--list", "--profile", "quick"],
                            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-3000:]
    kept = re.search(r"kept: (\d+) run\(s\) read from .*?, (\d+) present", listed.stdout)
    assert kept, listed.stdout[-3000:]
    assert int(kept.group(2)) > 0, "the installed copy found none of its kept records"
