"""The distribution's name and the module's: ``hyperspace-spark`` installs the module ``hyperspace``,
and when another project's package of that module name (``hyperspace-py`` on PyPI, an unrelated
client library) is installed into the same directory, importing ours names it and the way out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import hyperspace
from hyperspace import _ownership

# The other project's release that took the name this package had (PyPI, 2.0.321, "Vector
# Similarity Demo"): it also installs a top-level `hyperspace`.
OTHER = "hyperspace-py==2.0.321"


def test_the_distribution_is_hyperspace_spark() -> None:
    assert metadata.version(_ownership.DISTRIBUTION) == hyperspace.__version__
    assert _ownership.DISTRIBUTION == "hyperspace-spark"


@pytest.mark.slow
def test_the_other_hyperspace_installed_beside_ours_is_named(tmp_path: Path) -> None:
    """The real other package from PyPI and this package's files in one directory, as two
    `pip install`s into one site-packages leave them (the later one's ``__init__.py`` wins)."""
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), OTHER],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    assert (site / "hyperspace" / "rest.py").is_file()  # the other project's files
    ours = Path(hyperspace.__file__).resolve().parent
    shutil.copytree(ours, site / "hyperspace", dirs_exist_ok=True, ignore=shutil.ignore_patterns("jars", "__pycache__"))

    imported = subprocess.run(
        [sys.executable, "-W", "always", "-c", "import hyperspace; print(hyperspace.__file__)"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == str(site / "hyperspace" / "__init__.py")
    assert "HyperspaceInstallWarning" in imported.stderr
    assert "hyperspace-py 2.0.321" in imported.stderr
    assert "pip uninstall -y hyperspace-py hyperspace-spark && pip install hyperspace-spark" in imported.stderr

    # Our files alone in another directory: nothing to say.
    alone = tmp_path / "alone"
    shutil.copytree(ours, alone / "hyperspace", ignore=shutil.ignore_patterns("jars", "__pycache__"))
    quiet = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", "import hyperspace"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(alone)},
    )
    assert quiet.returncode == 0, quiet.stderr
