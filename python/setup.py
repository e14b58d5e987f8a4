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

setup(
    version=V["hyperspace"],
    install_requires=[
        f"pyspark=={V['spark']}",
        f"pyarrow{V['pyarrow.range']}",
        f"pandas{V['pandas.range']}",
    ],
    extras_require={
        "progress": [f"tqdm{V['tqdm.range']}"],
        "test": [
            f"pytest=={V['pytest']}",
            f"tqdm=={V['tqdm']}",
            f"hypothesis=={V['hypothesis']}",
            f"pyarrow=={V['pyarrow.test']}",
            f"pandas=={V['pandas.test']}",
            # Delta commands on indexed tables (tests/test_delta_commands.py); its jars come
            # from Maven Central through spark.jars.packages at session start.
            f"delta-spark=={V['delta']}",
            # The Spark Connect client (pyspark[connect] without its optional extras) for
            # tests/test_connect.py, which starts a Connect server from the installed pyspark.
            f"grpcio=={V['grpcio']}",
            f"grpcio-status=={V['grpcio-status']}",
            f"googleapis-common-protos=={V['googleapis-common-protos']}",
        ],
        # Delta Lake tables as index sources (docs/lakehouse.md); the jars come from Maven
        # Central through spark.jars.packages (delta.configure_spark_with_delta_pip).
        "delta": [f"delta-spark=={V['delta']}"],
        "dev": [
            # `make lint` / `make fmt`; settings in ../ruff.toml and pyproject.toml [tool.mypy].
            f"ruff=={V['ruff']}",
            f"mypy=={V['mypy']}",
        ],
        "bench": [
            f"tpchgen-cli=={V['tpchgen-cli']}",
            f"matplotlib=={V['matplotlib']}",
        ],
    },
)
