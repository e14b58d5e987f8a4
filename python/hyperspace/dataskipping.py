"""Data skipping index configs: ``DataSkippingIndexConfig`` and its sketches.

A data skipping index keeps one row per source file with small summaries ("sketches") of
columns or expressions; queries skip the files whose summaries prove that no row can match::

    from hyperspace import DataSkippingIndexConfig, MinMaxSketch, BloomFilterSketch

    config = DataSkippingIndexConfig(
        "events_skip",
        MinMaxSketch("ts"),
        BloomFilterSketch("lower(email)", fpp=0.01),
    )

Each class here mirrors the JVM sketch of the same name; ``to_json()`` gives exactly the JSON
that ``io.hyperspace.index.dataskipping.DataSkippingIndexConfig.fromJson`` reads and ``toJson``
writes (see docs/data-skipping.md). Sketches written in Scala by users are named by class with
:class:`CustomSketch`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar, TypeVar

from hyperspace import index_kinds
from hyperspace.exceptions import HyperspaceException

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from hyperspace._jvm import JavaObject

__all__ = [
    "Sketch",
    "MinMaxSketch",
    "BloomFilterSketch",
    "ValueListSketch",
    "PrefixSketch",
    "SuffixSketch",
    "NullCountSketch",
    "PartitionSketch",
    "CustomSketch",
    "DataSkippingIndexConfig",
]

N = TypeVar("N", int, float)

_SEPARATORS = (",", ":")  # the JVM's compact JSON, so both sides produce the same text


def _check_expr(kind: str, expr: object) -> str:
    if not isinstance(expr, str) or not expr.strip():
        raise HyperspaceException(f"Sketch {kind}: expr must be a non-empty SQL expression string; got {expr!r}.")
    return expr


def _number(value: float) -> str:
    # Python's shortest repr: the same text as the JVM's for ordinary values such as 0.01; below
    # 1e-3 the JVM writes "1.0E-4" where Python writes "0.0001", and each side parses both.
    return repr(float(value))


class Sketch:
    """A summary of one column or deterministic SQL expression per source file.

    Subclasses set ``kind`` (the name in the index log) and their parameters. Compare sketches
    with ``==``; ``to_dict()`` / ``from_dict()`` convert to and from the JSON object.

    Attributes:
        kind: the sketch's name in the index log (a :class:`CustomSketch`'s JVM class name).
        expr: the SQL expression over the source's columns, e.g. ``"a"`` or ``"lower(email)"``.
    """

    # A class attribute of the built-in sketches; set per instance by CustomSketch.
    kind: str = ""

    def __init__(self, expr: str) -> None:
        self.expr: str = _check_expr(self.kind or type(self).__name__, expr)

    def params(self) -> dict[str, str]:
        """Parameters besides ``expr``, as the strings the index log stores."""
        return {}

    def to_dict(self) -> dict[str, object]:
        """The JSON object of this sketch: ``{"kind", "expr", "params"}`` (params sorted)."""
        return {"kind": self.kind, "expr": self.expr, "params": dict(sorted(self.params().items()))}

    def to_json(self) -> str:
        """The compact JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), separators=_SEPARATORS, ensure_ascii=False)

    @staticmethod
    def from_dict(obj: Mapping[str, object]) -> Sketch:
        """The sketch described by a JSON object as :meth:`to_dict` (or the JVM) writes it.

        Raises:
            HyperspaceException: a malformed object or invalid parameters.
        """
        if not isinstance(obj, Mapping):
            raise HyperspaceException(f"A sketch must be a JSON object; got {obj!r}.")
        kind, expr = obj.get("kind"), obj.get("expr")
        if not isinstance(kind, str) or not isinstance(expr, str):
            raise HyperspaceException(f"Sketch {obj!r}: 'kind' and 'expr' must be strings.")
        raw = obj.get("params") or {}
        if not isinstance(raw, Mapping):
            raise HyperspaceException(f"Sketch {kind}({expr}): 'params' must be an object; got {raw!r}.")
        params = {str(k): str(v) for k, v in raw.items() if v is not None}
        cls = _BUILT_INS.get(kind)
        if cls is None:
            return CustomSketch(kind, expr, params)
        return cls._from_params(expr, params)

    @classmethod
    def _from_params(cls, expr: str, params: Mapping[str, str]) -> Sketch:
        _known(cls.kind, expr, params, ())
        return cls(expr)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sketch) and type(other) is type(self) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in sorted(self.params().items()))
        return f"{type(self).__name__}({self.expr!r}{extra})"


def _known(kind: str, expr: str, params: Mapping[str, str], names: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise HyperspaceException(
            f"Sketch {kind}({expr}): unknown param '{unknown[0]}'; known: {', '.join(sorted(names)) or 'none'}."
        )


def _parse(kind: str, expr: str, name: str, text: str | None, convert: Callable[[str], N], what: str) -> N | None:
    if text is None:
        return None
    try:
        return convert(text)
    except ValueError:
        raise HyperspaceException(f"Sketch {kind}({expr}): param '{name}' must be {what}; got '{text}'.") from None


def _parse_int(kind: str, expr: str, name: str, text: str | None) -> int | None:
    return _parse(kind, expr, name, text, int, "an integer")


def _parse_float(kind: str, expr: str, name: str, text: str | None) -> float | None:
    return _parse(kind, expr, name, text, float, "a number")


def _check_fpp(kind: str, expr: str, fpp: object) -> float:
    if isinstance(fpp, bool) or not isinstance(fpp, (int, float)) or not (0.0 < fpp < 1.0) or math.isnan(fpp):
        raise HyperspaceException(f"Sketch {kind}({expr}): fpp must be between 0 and 1 (exclusive); got {fpp!r}.")
    return float(fpp)


def _check_int(kind: str, expr: str, name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise HyperspaceException(f"Sketch {kind}({expr}): {name} must be an integer {bound}; got {value!r}.")
    return value


class MinMaxSketch(Sketch):
    """Smallest and largest non-null value per file (Spark's ordering, strings untruncated).

    Serves ``=``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IN``, ``!=``, ``NOT IN``,
    ``IS NOT NULL`` and, on strings, ``LIKE 'abc%'`` / ``startswith``.
    """

    kind = "MinMax"


class NullCountSketch(Sketch):
    """Number of NULLs per file: serves ``IS NULL``, ``IS NOT NULL`` and skips all-NULL files."""

    kind = "NullCount"


class PartitionSketch(Sketch):
    """The value of a hive partition column per file: any predicate over that column."""

    kind = "Partition"


class BloomFilterSketch(Sketch):
    """A Bloom filter of the values per file, sized for the file's own distinct count.

    Serves ``=`` and ``IN``.

    Args:
        expr: the column or SQL expression.
        fpp: false positive probability, in (0, 1).
        expected_distinct: the largest distinct count per file you expect; only matters for
            files with more than 65,536 distinct values (default 1,000,000).
    """

    kind = "BloomFilter"

    def __init__(self, expr: str, fpp: float = 0.01, expected_distinct: int | None = None) -> None:
        super().__init__(expr)
        self.fpp: float = _check_fpp(self.kind, expr, fpp)
        self.expected_distinct: int | None = (
            None
            if expected_distinct is None
            else _check_int(self.kind, expr, "expectedDistinct", expected_distinct, 1, 100_000_000)
        )

    def params(self) -> dict[str, str]:
        """``fpp`` and, when set, ``expectedDistinct``."""
        out = {"fpp": _number(self.fpp)}
        if self.expected_distinct is not None:
            out["expectedDistinct"] = str(self.expected_distinct)
        return out

    @classmethod
    def _from_params(cls, expr: str, params: Mapping[str, str]) -> Sketch:
        _known(cls.kind, expr, params, ("fpp", "expectedDistinct"))
        fpp = _parse_float(cls.kind, expr, "fpp", params.get("fpp"))
        distinct = _parse_int(cls.kind, expr, "expectedDistinct", params.get("expectedDistinct"))
        return cls(expr, 0.01 if fpp is None else fpp, distinct)


class ValueListSketch(Sketch):
    """The distinct values per file, or a Bloom filter above ``max_values`` (the hybrid index).

    With a list: any predicate over ``expr`` alone (``=``, ``IN``, ``!=``, ``NOT IN``, ``LIKE``,
    ranges, ``IS NULL``, functions of it). With the Bloom filter fallback: ``=`` and ``IN``.

    Args:
        expr: the column or SQL expression.
        max_values: the largest list kept per file (>= 1).
        fpp: false positive probability of the fallback Bloom filter, in (0, 1).
    """

    kind = "ValueList"
    DEFAULT_MAX_VALUES: ClassVar[int] = 1000

    def __init__(self, expr: str, max_values: int = DEFAULT_MAX_VALUES, fpp: float = 0.01) -> None:
        super().__init__(expr)
        self.max_values: int = _check_int(self.kind, expr, "maxValues", max_values, 1, 2**31 - 1)
        self.fpp: float = _check_fpp(self.kind, expr, fpp)

    def params(self) -> dict[str, str]:
        """``maxValues`` and ``fpp``."""
        return {"maxValues": str(self.max_values), "fpp": _number(self.fpp)}

    @classmethod
    def _from_params(cls, expr: str, params: Mapping[str, str]) -> Sketch:
        _known(cls.kind, expr, params, ("maxValues", "fpp"))
        max_values = _parse_int(cls.kind, expr, "maxValues", params.get("maxValues"))
        fpp = _parse_float(cls.kind, expr, "fpp", params.get("fpp"))
        return cls(expr, cls.DEFAULT_MAX_VALUES if max_values is None else max_values, 0.01 if fpp is None else fpp)


class _AffixSketch(Sketch):
    def __init__(self, expr: str, length: int) -> None:
        super().__init__(expr)
        self.length: int = _check_int(self.kind, expr, "length", length, 1, 2**31 - 1)

    def params(self) -> dict[str, str]:
        """``length``."""
        return {"length": str(self.length)}

    @classmethod
    def _from_params(cls, expr: str, params: Mapping[str, str]) -> Sketch:
        _known(cls.kind, expr, params, ("length",))
        length = _parse_int(cls.kind, expr, "length", params.get("length"))
        if length is None:
            raise HyperspaceException(f"Sketch {cls.kind}({expr}): param 'length' is required.")
        return cls(expr, length)


class PrefixSketch(_AffixSketch):
    """The distinct first ``length`` characters per file: ``LIKE 'abc%'``, ``startswith``, ``=``, ``IN``."""

    kind = "Prefix"


class SuffixSketch(_AffixSketch):
    """The distinct last ``length`` characters per file: ``LIKE '%xyz'``, ``endswith``, ``=``, ``IN``."""

    kind = "Suffix"


class CustomSketch(Sketch):
    """A sketch implemented on the JVM by the user, named by its kind (the Scala class name).

    Args:
        kind: the fully qualified Scala class name (or a name registered with ``SketchSerde.register``).
        expr: the column or SQL expression.
        params: the sketch's parameters as strings (passed to its ``(String, Map)`` constructor).
    """

    def __init__(self, kind: str, expr: str, params: Mapping[str, str] | None = None) -> None:
        if not isinstance(kind, str) or not kind:
            raise HyperspaceException(f"CustomSketch kind must be a class name; got {kind!r}.")
        if kind in _BUILT_INS:
            raise HyperspaceException(f"Sketch kind '{kind}' is built in; use {_BUILT_INS[kind].__name__}.")
        self.kind = kind
        super().__init__(expr)
        self._params = {str(k): str(v) for k, v in (params or {}).items()}

    def params(self) -> dict[str, str]:
        """The parameters given."""
        return dict(self._params)

    def __repr__(self) -> str:
        return f"CustomSketch({self.kind!r}, {self.expr!r}, {self._params!r})"


_BUILT_INS: dict[str, type[Sketch]] = {
    cls.kind: cls
    for cls in (
        MinMaxSketch,
        BloomFilterSketch,
        ValueListSketch,
        PrefixSketch,
        SuffixSketch,
        NullCountSketch,
        PartitionSketch,
    )
}


class DataSkippingIndexConfig:
    """A data skipping index: ``DataSkippingIndexConfig("idx", MinMaxSketch("a"), ...)``.

    Args:
        name: the index name.
        sketch: the first sketch (at least one is required).
        *more_sketches: further sketches; the same sketch may not appear twice.
    """

    __slots__ = ("name", "sketches")

    kind_name: ClassVar[str] = index_kinds.DATA_SKIPPING

    def __init__(self, name: str, sketch: Sketch, *more_sketches: Sketch) -> None:
        if not isinstance(name, str) or not name.strip():
            raise HyperspaceException("DataSkippingIndexConfig needs a non-empty index name.")
        sketches = (sketch, *more_sketches)
        for s in sketches:
            if not isinstance(s, Sketch):
                raise HyperspaceException(
                    f"Data skipping index '{name}': sketches must be Sketch objects "
                    f"(MinMaxSketch(...), ...); got {s!r}."
                )
        seen: set[Sketch] = set()
        for s in sketches:
            if s in seen:
                raise HyperspaceException(f"Sketch {s!r} appears more than once in data skipping index '{name}'.")
            seen.add(s)
        self.name: str = name
        self.sketches: tuple[Sketch, ...] = sketches

    @property
    def indexName(self) -> str:  # noqa: N802
        """The original Hyperspace's name for ``name``."""
        return self.name

    def to_json(self) -> str:
        """The JSON text the JVM's ``DataSkippingIndexConfig.fromJson`` reads (and ``toJson`` writes)."""
        return json.dumps(
            {"name": self.name, "sketches": [s.to_dict() for s in self.sketches]},
            separators=_SEPARATORS,
            ensure_ascii=False,
        )

    @staticmethod
    def from_json(text: str) -> DataSkippingIndexConfig:
        """The config described by :meth:`to_json`'s (or the JVM's) JSON text."""
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise HyperspaceException(f"Invalid DataSkippingIndexConfig JSON: {e}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("sketches"), list) or not obj["sketches"]:
            raise HyperspaceException(
                f"DataSkippingIndexConfig JSON needs a name and a list of sketches; got {text!r}."
            )
        name = obj.get("name")
        if not isinstance(name, str):
            raise HyperspaceException("DataSkippingIndexConfig needs a non-empty index name.")
        sketches = [Sketch.from_dict(s) for s in obj["sketches"]]
        return DataSkippingIndexConfig(name, *sketches)

    def _to_java(self, spark: SparkSession) -> JavaObject:
        """The JVM ``DataSkippingIndexConfig`` of this config (its errors become Python ones)."""
        from hyperspace._jvm import java_class, translated_errors

        with translated_errors():
            return java_class(spark, "index.dataskipping.DataSkippingIndexConfig").fromJson(self.to_json())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DataSkippingIndexConfig) and (self.name, self.sketches) == (other.name, other.sketches)

    def __hash__(self) -> int:
        return hash((self.name, self.sketches))

    def __repr__(self) -> str:
        return f"DataSkippingIndexConfig({self.name!r}, {', '.join(map(repr, self.sketches))})"
