"""Whether the ``hyperspace`` module shares its directory with another distribution's.

Another project on PyPI also installs a top-level module named ``hyperspace`` (``hyperspace-py``,
an unrelated client library). Installed into the same environment as ``hyperspace-spark``, the two
write into one ``site-packages/hyperspace/`` directory: whichever was installed last owns
``__init__.py``, and uninstalling either removes files the other needs. When this package's code
runs it can at least say so: the distributions recorded in the directory that holds this package
are read (their ``RECORD``, or an egg's ``installed-files.txt``/``top_level.txt``), and any other
one that installed files under ``hyperspace/`` is named with the way out, when the package is
imported (``hyperspace/__init__.py`` imports this module before most others).

Only the directory holding this package is read (one listing, a few small files), not every
distribution on ``sys.path`` (``importlib.metadata.packages_distributions`` reads them all, most of
a second in a large notebook environment): a ``hyperspace`` module earlier on ``sys.path`` would
shadow this one entirely, and then none of this code runs.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

DISTRIBUTION = "hyperspace-spark"
MODULE = "hyperspace"


class HyperspaceInstallWarning(UserWarning):
    """The ``hyperspace`` module's directory also holds files of another distribution."""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _claims_module(info: Path) -> bool:
    """Whether the distribution described by ``info`` (a dist-info or egg-info) installed ``hyperspace``."""
    prefixes = (f"{MODULE}/", f"{MODULE}\\", f"{MODULE}.py")
    for listing in ("RECORD", "installed-files.txt"):
        path = info / listing
        if path.is_file():
            lines = path.read_text(errors="replace").splitlines()
            if listing == "installed-files.txt":  # paths relative to the egg-info directory
                lines = [line.removeprefix("../") for line in lines]
            return any(line.startswith(prefixes) for line in lines)
    top_level = info / "top_level.txt"
    return top_level.is_file() and MODULE in top_level.read_text(errors="replace").split()


def other_distributions(site: Path) -> list[str]:
    """``name version`` of each distribution in ``site``, other than this one, that installed ``hyperspace``."""
    found = []
    for info in sorted([*site.glob("*.dist-info"), *site.glob("*.egg-info")]):
        name, _, rest = info.name.rpartition(".")[0].partition("-")
        if _normalized(name) == DISTRIBUTION or not info.is_dir():
            continue
        if _claims_module(info):
            version = rest.split("-")[0] if rest else "?"
            found.append(f"{name.replace('_', '-')} {version}")
    return found


def warn_if_shared(package_dir: Path) -> None:
    """Warns, naming them, when other distributions installed files into this package's directory."""
    site = package_dir.parent
    try:
        others = other_distributions(site)
    except OSError:
        return  # an unreadable directory: nothing to say about it
    if others:
        names = " ".join(o.split()[0] for o in others)
        warnings.warn(
            f"The '{MODULE}' module in {package_dir} is shared with {', '.join(others)}, another "
            f"project's package of the same module name, so files of the two may be mixed. "
            f"Uninstall both and install this one again: "
            f"pip uninstall -y {names} {DISTRIBUTION} && pip install {DISTRIBUTION}",
            HyperspaceInstallWarning,
            stacklevel=2,
        )


warn_if_shared(Path(__file__).resolve().parent)
