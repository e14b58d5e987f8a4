"""HyperspaceConfig: typed attributes, validation through the JVM, the override context."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from hyperspace import HyperspaceConfig, HyperspaceException


@pytest.fixture()
def conf(spark: SparkSession) -> HyperspaceConfig:
    return HyperspaceConfig(spark)


def test_keys_are_exactly_the_jvm_settings(spark: SparkSession, conf: HyperspaceConfig) -> None:
    jvm_keys = list(spark.sparkContext._jvm.io.hyperspace.config.HyperspaceConf.allKeysAsJava())
    assert sorted(HyperspaceConfig.settings().values()) == sorted(jvm_keys)


def test_older_key_names_are_exactly_the_jvm_alternatives(spark: SparkSession, conf: HyperspaceConfig) -> None:
    jvm_aliases = dict(spark.sparkContext._jvm.io.hyperspace.config.HyperspaceConf.alternativeKeysAsJava())
    assert (
        HyperspaceConfig.aliases()
        == jvm_aliases
        == {"spark.hyperspace.index.num.buckets": "spark.hyperspace.index.numBuckets"}
    )
    # Setting through the old name sets the current key; unset clears both.
    spark.conf.set("spark.hyperspace.index.num.buckets", "9")
    try:
        assert conf.num_buckets == 9
        conf.set("spark.hyperspace.index.num.buckets", 11)
        assert spark.conf.get("spark.hyperspace.index.numBuckets") == "11" and conf.num_buckets == 11
    finally:
        conf.unset("num_buckets")
    assert conf.num_buckets == 200 and spark.conf.get("spark.hyperspace.index.num.buckets", None) is None


def test_defaults_are_typed(conf: HyperspaceConfig) -> None:
    assert conf.num_buckets == 200
    assert conf.lineage_enabled is False
    assert conf.hybrid_scan_enabled is False
    assert conf.hybrid_scan_max_appended_ratio == 0.3
    assert conf.hybrid_scan_max_deleted_ratio == 0.2
    assert conf.optimize_file_size_threshold == 256 * 1024 * 1024
    assert conf.explain_display_mode == "plaintext"
    assert conf.dataskipping_auto_partition_sketch is True
    assert conf.system_path.endswith("/indexes")


def test_every_setting_reads_back_what_it_renders(conf: HyperspaceConfig) -> None:
    # Each setting's value round-trips through its session string: a parser that disagrees with
    # its renderer (e.g. Python's bool() of "false", which is True) reads a setting it did not set.
    for name in HyperspaceConfig.settings():
        value = getattr(conf, name)
        if isinstance(value, bool):
            for flipped in (not value, value):
                with conf.override(**{name: flipped}):
                    assert getattr(conf, name) is flipped, name


def test_setting_an_attribute_sets_the_session_key(spark: SparkSession, conf: HyperspaceConfig) -> None:
    try:
        conf.num_buckets = 16
        conf.optimize_file_size_threshold = "64m"
        conf.explain_display_mode = "HTML"
        assert spark.conf.get("spark.hyperspace.index.numBuckets") == "16"
        assert conf.num_buckets == 16
        assert conf.optimize_file_size_threshold == 64 * 1024 * 1024
        assert conf.explain_display_mode == "html"
    finally:
        for name in ("num_buckets", "optimize_file_size_threshold", "explain_display_mode"):
            conf.unset(name)
    assert conf.num_buckets == 200


def test_override_sets_and_restores(spark: SparkSession, conf: HyperspaceConfig) -> None:
    spark.conf.set("spark.hyperspace.index.numBuckets", "12")
    try:
        with conf.override(num_buckets=8, lineage_enabled=True) as inner:
            assert inner is conf
            assert conf.num_buckets == 8 and conf.lineage_enabled is True
        assert conf.num_buckets == 12
        assert spark.conf.get("spark.hyperspace.index.lineage.enabled", None) is None
    finally:
        spark.conf.unset("spark.hyperspace.index.numBuckets")


def test_override_restores_after_an_error(conf: HyperspaceConfig) -> None:
    with pytest.raises(RuntimeError):
        with conf.override(hybrid_scan_enabled=True):
            raise RuntimeError("boom")
    assert conf.hybrid_scan_enabled is False


def test_an_invalid_value_in_override_changes_nothing(conf: HyperspaceConfig) -> None:
    with pytest.raises(HyperspaceException, match="spark.hyperspace.index.hybridscan.maxDeletedRatio"):
        with conf.override(num_buckets=8, hybrid_scan_max_deleted_ratio=2.0):
            pass
    assert conf.num_buckets == 200


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("num_buckets", 0, "Invalid value '0' for spark.hyperspace.index.numBuckets: must be between 1 and 100000."),
        ("num_buckets", "8", "Invalid value '8' for spark.hyperspace.index.numBuckets: expected an int, got str."),
        (
            "lineage_enabled",
            "yes",
            "Invalid value 'yes' for spark.hyperspace.index.lineage.enabled: expected a bool, got str.",
        ),
        (
            "explain_display_mode",
            "fancy",
            "Invalid value 'fancy' for spark.hyperspace.explain.displayMode: expected one of console, html, plaintext.",
        ),
        (
            "optimize_file_size_threshold",
            "huge",
            "Invalid value 'huge' for spark.hyperspace.index.optimize.fileSizeThreshold: expected a size such as 256m, 1g or a number of bytes.",
        ),
    ],
)
def test_invalid_values_are_rejected_with_the_key_named(
    conf: HyperspaceConfig, name: str, value: object, message: str
) -> None:
    with pytest.raises(HyperspaceException) as info:
        setattr(conf, name, value)
    assert str(info.value) == message
    assert getattr(conf, name) == getattr(HyperspaceConfig, name).parse(conf.get(name))


def test_unknown_settings_are_rejected(conf: HyperspaceConfig) -> None:
    with pytest.raises(HyperspaceException, match="Unknown Hyperspace setting 'num_bucket'"):
        conf.set("num_bucket", 3)


def test_full_keys_work_too(conf: HyperspaceConfig) -> None:
    conf.set("spark.hyperspace.index.numBuckets", 5)
    try:
        assert conf.get("num_buckets") == "5"
    finally:
        conf.unset("spark.hyperspace.index.numBuckets")


def test_repr_and_to_dict(conf: HyperspaceConfig) -> None:
    values = conf.to_dict()
    assert values["num_buckets"] == 200 and set(values) == set(HyperspaceConfig.settings())
    assert repr(conf).startswith("HyperspaceConfig(system_path=")
