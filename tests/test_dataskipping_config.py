"""DataSkippingIndexConfig and its sketches: Python validation and JSON shared with the JVM."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

from hyperspace import (
    BloomFilterSketch,
    CustomSketch,
    DataSkippingIndexConfig,
    HyperspaceException,
    MinMaxSketch,
    NullCountSketch,
    PartitionSketch,
    PrefixSketch,
    Sketch,
    SuffixSketch,
    ValueListSketch,
)

ALL = DataSkippingIndexConfig(
    "idx",
    MinMaxSketch("a"),
    BloomFilterSketch("lower(email)"),
    BloomFilterSketch("b", fpp=0.05, expected_distinct=5000),
    ValueListSketch("c"),
    ValueListSketch("upper(c)", max_values=10, fpp=0.1),
    PrefixSketch("s", 3),
    SuffixSketch("s", 4),
    NullCountSketch("a"),
    PartitionSketch("p"),
)


def test_json_form() -> None:
    config = DataSkippingIndexConfig("idx", MinMaxSketch("a"), BloomFilterSketch("b", expected_distinct=10))
    assert config.to_json() == (
        '{"name":"idx","sketches":[{"kind":"MinMax","expr":"a","params":{}},'
        '{"kind":"BloomFilter","expr":"b","params":{"expectedDistinct":"10","fpp":"0.01"}}]}'
    )


def test_round_trip_in_python() -> None:
    assert DataSkippingIndexConfig.from_json(ALL.to_json()) == ALL
    assert Sketch.from_dict({"kind": "BloomFilter", "expr": "b", "params": {"fpp": 0.05}}) == BloomFilterSketch(
        "b", 0.05
    )
    assert Sketch.from_dict({"kind": "my.Sketch", "expr": "x", "params": {"k": "1"}}) == CustomSketch(
        "my.Sketch", "x", {"k": "1"}
    )


def test_the_jvm_reads_and_writes_the_same_json(spark: SparkSession) -> None:
    jvm = ALL._to_java(spark)
    assert jvm.name() == "idx"
    assert jvm.sketches().size() == len(ALL.sketches)
    assert jvm.toJson() == ALL.to_json()
    assert DataSkippingIndexConfig.from_json(jvm.toJson()) == ALL


def test_jvm_defaults_match_python(spark: SparkSession) -> None:
    # Params left out are filled with the same defaults on both sides.
    text = json.dumps(
        {"name": "i", "sketches": [{"kind": "ValueList", "expr": "c"}, {"kind": "BloomFilter", "expr": "b"}]}
    )
    jvm = DataSkippingIndexConfig("i", ValueListSketch("c"), BloomFilterSketch("b"))._to_java(spark)
    from hyperspace._jvm import java_class

    parsed = java_class(spark, "index.dataskipping.DataSkippingIndexConfig").fromJson(text)
    assert parsed.toJson() == jvm.toJson()
    assert DataSkippingIndexConfig.from_json(parsed.toJson()) == DataSkippingIndexConfig.from_json(text)


def test_jvm_errors_arrive_as_hyperspace_exceptions(spark: SparkSession) -> None:
    with pytest.raises(HyperspaceException, match="Unknown sketch kind 'com.example.NoSuchSketch'"):
        DataSkippingIndexConfig("idx", CustomSketch("com.example.NoSuchSketch", "a"))._to_java(spark)
    with pytest.raises(HyperspaceException, match="not a io.hyperspace.index.dataskipping.Sketch"):
        DataSkippingIndexConfig("idx", CustomSketch("java.lang.Thread", "a"))._to_java(spark)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: BloomFilterSketch("b", fpp=1.0), r"BloomFilter\(b\): fpp must be between 0 and 1"),
        (lambda: BloomFilterSketch("b", fpp=0), "fpp must be between 0 and 1"),
        (lambda: BloomFilterSketch("b", expected_distinct=0), "expectedDistinct must be an integer between"),
        (lambda: ValueListSketch("c", max_values=0), r"ValueList\(c\): maxValues must be an integer between 1 and"),
        (lambda: PrefixSketch("s", 0), r"Prefix\(s\): length must be"),
        (lambda: SuffixSketch("s", True), "length must be an integer"),
        (lambda: MinMaxSketch(""), "expr must be a non-empty SQL expression"),
        (lambda: DataSkippingIndexConfig("", MinMaxSketch("a")), "non-empty index name"),
        (lambda: DataSkippingIndexConfig("i", MinMaxSketch("a"), MinMaxSketch("a")), "appears more than once"),
        (lambda: DataSkippingIndexConfig("i", "a"), "must be Sketch objects"),  # type: ignore[arg-type]
        (lambda: CustomSketch("MinMax", "a"), "is built in; use MinMaxSketch"),
        (lambda: Sketch.from_dict({"kind": "Prefix", "expr": "s"}), "'length' is required"),
        (lambda: Sketch.from_dict({"kind": "MinMax", "expr": "s", "params": {"x": "1"}}), "unknown param 'x'"),
        (lambda: Sketch.from_dict({"kind": "BloomFilter", "expr": "s", "params": {"fpp": "x"}}), "must be a number"),
        (lambda: DataSkippingIndexConfig.from_json("{}"), "needs a name and a list of sketches"),
    ],
)
def test_invalid_configs_name_what_is_wrong(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(HyperspaceException, match=message):
        make()


def test_repr_and_equality() -> None:
    assert repr(BloomFilterSketch("b", 0.05)) == "BloomFilterSketch('b', fpp=0.05)"
    assert MinMaxSketch("a") != NullCountSketch("a")
    assert hash(PrefixSketch("s", 3)) == hash(PrefixSketch("s", 3))
