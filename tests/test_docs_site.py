"""The docs site (``make docs``, mkdocs.yml) builds strict from the checkout, and strictness holds:
a dead link to a page, an anchor or a repository file, or a Python API name that no longer
exists fails the build naming it. No JVM: mkdocstrings reads the package's source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO


def build(config: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` (from its directory), without the caller's
    HYPERSPACE_SCM_URL unless ``env`` sets it."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(config.parent),
        env={**{k: v for k, v in os.environ.items() if k != "HYPERSPACE_SCM_URL"}, **(env or {})},
    )


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    run = build(REPO / "mkdocs.yml", "-d", str(site))
    assert run.returncode == 0, run.stderr[-4000:]
    # Every page of docs/ is in the nav (omitted files warn, and strict fails on a warning), and
    # the API reference holds the package's entry points.
    api = (site / "api" / "python" / "index.html").read_text(encoding="utf-8")
    for name in ("configure_spark_with_hyperspace", "create_index", "HyperspaceException", "IndexConfig"):
        assert name in api, name


@pytest.fixture()
def small_site(tmp_path: Path) -> Path:
    """A site of one page over a copy of the package, with the repository's hook and settings."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.md").write_text("# a result\n")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A section\n")
    shutil.copytree(
        REPO / "python" / "hyperspace", tmp_path / "python" / "hyperspace", ignore=shutil.ignore_patterns("jars")
    )
    (tmp_path / "tools" / "docs").mkdir(parents=True)
    shutil.copy(REPO / "tools" / "docs" / "hooks.py", tmp_path / "tools" / "docs" / "hooks.py")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav_at = config.index("\nnav:")
    plugins_at = config.index("\nplugins:")
    config = config[:nav_at] + "\nnav:\n  - index.md\n  - other.md" + config[plugins_at:]
    (tmp_path / "mkdocs.yml").write_text(config)
    return tmp_path


def page(site: Path, text: str) -> Path:
    (site / "docs" / "index.md").write_text(textwrap.dedent(text))
    return site / "mkdocs.yml"


def test_a_small_site_with_good_links_builds(small_site: Path) -> None:
    config = page(
        small_site,
        """
        # Home
        [other](other.md), [its section](other.md#a-section), [a result](../results/run.md).

        ::: hyperspace.config
        """,
    )
    run = build(config, env={"HYPERSPACE_SCM_URL": "https://example.org/hs"})
    assert run.returncode == 0, run.stderr[-3000:]
    html = (small_site / "target" / "site" / "index.html").read_text(encoding="utf-8")
    assert 'href="https://example.org/hs/blob/main/results/run.md"' in html
    # Without a repository to point at, the file's path stays as text, not a dead link.
    assert build(config).returncode == 0
    html = (small_site / "target" / "site" / "index.html").read_text(encoding="utf-8")
    assert "results/run.md" in html and "../results/run.md" not in html


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[gone](gone.md)", "gone.md"),
        ("[no such section](other.md#no-such-section)", "no-such-section"),
        ("[a lost result](../results/lost.md)", "../results/lost.md"),
        ("::: hyperspace.no_such_module", "no_such_module"),
    ],
    ids=["page", "anchor", "repository-file", "api-name"],
)
def test_a_dead_reference_fails_the_build_naming_it(small_site: Path, text: str, named: str) -> None:
    run = build(page(small_site, f"# Home\n\n{text}\n"))
    assert run.returncode != 0
    assert named in run.stderr, run.stderr[-3000:]
