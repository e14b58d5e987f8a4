"""Reads the pinned versions from versions.properties, the one place they are written."""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def _versions() -> dict[str, str]:
    for candidate in (HERE.parent / "versions.properties", HERE / "versions.properties"):
        if candidate.is_file():
            pairs = (
                line.split("=", 1)
                for line in candidate.read_text().splitlines()
                if "=" in line and not line.lstrip().startswith("#")
            )
            return {k.strip(): v.strip() for k, v in pairs}
    raise FileNotFoundError("versions.properties not found beside or above python/")


V = _versions()


def _pyspark_range() -> str:
    """Any pyspark of a supported line: from the oldest line's oldest checked patch up to the next line
    (a patch the line's jar is not checked against is refused when the session starts)."""
    lines = V["spark.lines"].split()
    major, minor = lines[-1].split(".")
    return f"pyspark>={V['spark.patches.' + lines[0]].split()[0]},<{major}.{int(minor) + 1}"


setup(
    version=V["hyperspace"],
    install_requires=[
        # The wheel carries a jar per Spark line; hyperspace.jar_path() picks the installed one's.
        _pyspark_range(),
        f"pyarrow{V['pyarrow.range']}",
        f"pandas{V['pandas.range']}",
    ],
    extras_require={
        "progress": [f"tqdm{V['tqdm.range']}"],
        "test": [
            f"pytest=={V['pytest']}",
            f"pytest-xdist=={V['pytest-xdist']}",
            f"tqdm=={V['tqdm']}",
            f"hypothesis=={V['hypothesis']}",
            f"pyarrow=={V['pyarrow.test']}",
            f"pandas=={V['pandas.test']}",
            # Delta commands on indexed tables (tests/test_delta_commands.py) need delta-spark
            # too, of the Spark line's Delta release (`delta.<line>`): the Makefile installs it
            # with the line's pyspark, as an extra cannot depend on the pyspark installed.
            # The Spark Connect client (pyspark[connect] without its optional extras) for
            # tests/test_connect.py, which starts a Connect server from the installed pyspark.
            f"grpcio=={V['grpcio']}",
            f"grpcio-status=={V['grpcio-status']}",
            f"googleapis-common-protos=={V['googleapis-common-protos']}",
            f"zstandard=={V['zstandard']}",
        ],
        "dev": [
            # `make lint` / `make fmt`; settings in ../ruff.toml and pyproject.toml [tool.mypy].
            f"ruff=={V['ruff']}",
            f"mypy=={V['mypy']}",
        ],
        "bench": [
            f"tpchgen-cli=={V['tpchgen-cli']}",
            f"tpcgen-cli=={V['tpcgen-cli']}",
            f"matplotlib=={V['matplotlib']}",
        ],
    },
)
