"""Hyperspace for Spark 4: indexes over files in your lake, used automatically by queries.

Quick start::

    from pyspark.sql import SparkSession
    from hyperspace import Hyperspace, configure_spark_with_hyperspace, enable_hyperspace

    spark = configure_spark_with_hyperspace(SparkSession.builder).getOrCreate()
    enable_hyperspace(spark)
    hs = Hyperspace(spark)
"""

from __future__ import annotations

from importlib import metadata as _metadata

from hyperspace._jvm import install_error_translation, jar_path

# Importing it names any other distribution that installed a module `hyperspace` beside this one.
from hyperspace._ownership import HyperspaceInstallWarning
from hyperspace.advisor import QueryEvidence, Recommendations, RecommendedIndex, RecordedQuery, RejectedCandidate
from hyperspace.config import HyperspaceConfig
from hyperspace.dataskipping import (
    BloomFilterSketch,
    CustomSketch,
    DataSkippingIndexConfig,
    MinMaxSketch,
    NullCountSketch,
    PartitionSketch,
    PrefixSketch,
    Sketch,
    SuffixSketch,
    ValueListSketch,
)
from hyperspace.exceptions import (
    HyperspaceConflictException,
    HyperspaceException,
    HyperspaceExtensionNotInstalledException,
    HyperspaceIndexNotFoundException,
    HyperspaceJarNotFoundError,
    HyperspaceNotLoadedError,
)
from hyperspace.hyperspace import (
    FormatPruning,
    Hyperspace,
    IndexSkips,
    MaintenanceResult,
    RelationSkippingStats,
    SketchSkips,
)
from hyperspace.index_config import CoveringIndexConfig, IndexConfig, ZOrderCoveringIndexConfig
from hyperspace.indexed import IndexedDataFrame
from hyperspace.progress import Progress
from hyperspace.session import (
    attach,
    configure_spark_with_hyperspace,
    disable_hyperspace,
    disableHyperspace,
    enable_hyperspace,
    enableHyperspace,
    is_hyperspace_enabled,
    isHyperspaceEnabled,
)
from hyperspace.split_index import SplitIndexConfig

# Hyperspace's JVM exceptions reach Python as hyperspace.exceptions wherever they are raised,
# including inside ordinary pyspark calls such as collect() on a rewritten plan.
install_error_translation()

try:
    __version__: str = _metadata.version("hyperspace-spark")
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Hyperspace",
    "HyperspaceInstallWarning",
    "MaintenanceResult",
    "RelationSkippingStats",
    "FormatPruning",
    "IndexSkips",
    "SketchSkips",
    "HyperspaceConfig",
    "HyperspaceConflictException",
    "HyperspaceException",
    "HyperspaceIndexNotFoundException",
    "IndexConfig",
    "CoveringIndexConfig",
    "ZOrderCoveringIndexConfig",
    "SplitIndexConfig",
    "IndexedDataFrame",
    "Recommendations",
    "RecommendedIndex",
    "RejectedCandidate",
    "QueryEvidence",
    "RecordedQuery",
    "DataSkippingIndexConfig",
    "Sketch",
    "MinMaxSketch",
    "BloomFilterSketch",
    "ValueListSketch",
    "PrefixSketch",
    "SuffixSketch",
    "NullCountSketch",
    "PartitionSketch",
    "CustomSketch",
    "HyperspaceExtensionNotInstalledException",
    "HyperspaceJarNotFoundError",
    "HyperspaceNotLoadedError",
    "attach",
    "configure_spark_with_hyperspace",
    "enable_hyperspace",
    "disable_hyperspace",
    "is_hyperspace_enabled",
    "enableHyperspace",
    "disableHyperspace",
    "isHyperspaceEnabled",
    "jar_path",
    "Progress",
    "__version__",
]
