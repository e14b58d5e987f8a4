"""How the ``Hyperspace`` facade reaches the JVM: the one place the transport is chosen.

A classic session has a JVM in this process, reached through py4j (:class:`Py4jBackend`); a
Spark Connect session has only a gRPC channel to a server, so every operation is one of
Hyperspace's SQL statements (docs/sql.md) run with ``spark.sql`` (:class:`SqlBackend`). Both run
the same JVM code — the SQL statements call the same Scala facade — and hand back the same
plain values (text, JSON of a maintenance result or of skipping statistics, DataFrames), which
``hyperspace.hyperspace`` turns into its Python types once.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from hyperspace import exceptions
from hyperspace._jvm import EXTENSION_CLASS, JavaObject, java_dataframe, java_hyperspace, python_dataframe
from hyperspace.advisor import recommended_config
from hyperspace.dataskipping import CustomSketch, DataSkippingIndexConfig
from hyperspace.index_config import IndexConfig
from hyperspace.index_kinds import KindConfig

if TYPE_CHECKING:
    from hyperspace.advisor import WorkloadQuery

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Backend", "Py4jBackend", "SqlBackend", "backend_for", "is_connect_session"]

R = TypeVar("R")

APPLY_ENABLED_KEY = "spark.hyperspace.apply.enabled"


class Backend(Protocol):
    """The operations of the facade, in the JVM's own terms (JSON text where the JVM gives JSON)."""

    def version(self) -> str: ...
    def spark_version(self) -> str: ...
    def system_path(self) -> str: ...
    def enable(self) -> None: ...
    def disable(self) -> None: ...
    def is_enabled(self) -> bool: ...
    def create_index(self, df: DataFrame, config: KindConfig) -> None: ...
    def index_kinds(self) -> list[str]: ...
    def last_query_skipping_stats_json(self) -> str: ...
    def skipping_stats_json(self, df: DataFrame) -> str: ...
    def refresh_index_json(self, name: str, mode: str) -> str: ...
    def optimize_index_json(self, name: str, mode: str) -> str: ...
    def vacuum_index_json(self, name: str, retain_hours: float | None) -> str: ...
    def delete_index(self, name: str) -> None: ...
    def restore_index(self, name: str) -> None: ...
    def cancel(self, name: str, force: bool) -> None: ...
    def indexes(self) -> DataFrame: ...
    def list_indexes(self) -> DataFrame: ...
    def index(self, name: str) -> DataFrame: ...
    def explain(self, df: DataFrame, verbose: bool) -> str: ...
    def why_not(self, df: DataFrame, index_name: str | None) -> str: ...
    def what_if(self, df: DataFrame, configs: Sequence[IndexConfig]) -> str: ...
    def recommend(
        self, workload: Sequence[WorkloadQuery] | None, budget_bytes: int | None, max_indexes: int | None
    ) -> tuple[str, Callable[[], None], dict[str, str]]: ...
    def recorded_queries(self) -> list[tuple[str, int]]: ...
    def clear_recorded_queries(self) -> int: ...


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def backend_for(spark: SparkSession) -> Backend:
    """The backend for ``spark``: SQL over Spark Connect, py4j otherwise."""
    return SqlBackend(spark) if is_connect_session(spark) else Py4jBackend(spark)


class Py4jBackend:
    """The JVM facade ``io.hyperspace.Hyperspace`` of a classic session, through py4j."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._jhs: JavaObject = java_hyperspace(spark)

    def version(self) -> str:
        return str(self._jhs.version())

    def spark_version(self) -> str:
        return str(self._jhs.sparkVersion())

    def system_path(self) -> str:
        return str(self._jhs.systemPath())

    def enable(self) -> None:
        self._jhs.enable()

    def disable(self) -> None:
        self._jhs.disable()

    def is_enabled(self) -> bool:
        return bool(self._jhs.isEnabled())

    def create_index(self, df: DataFrame, config: KindConfig) -> None:
        self._jhs.createIndexOfKindFromJson(java_dataframe(df), config.kind_name, config.to_json())

    def index_kinds(self) -> list[str]:
        # Kind names are class-path names of a sort: never empty, never with a line break.
        return str(self._jhs.indexKinds().mkString("\n")).split("\n")

    def last_query_skipping_stats_json(self) -> str:
        return str(self._jhs.lastQuerySkippingStatsJson())

    def skipping_stats_json(self, df: DataFrame) -> str:
        return str(self._jhs.skippingStatsJson(java_dataframe(df)))

    def refresh_index_json(self, name: str, mode: str) -> str:
        return str(self._jhs.refreshIndex(name, mode).toJson())

    def optimize_index_json(self, name: str, mode: str) -> str:
        return str(self._jhs.optimizeIndex(name, mode).toJson())

    def vacuum_index_json(self, name: str, retain_hours: float | None) -> str:
        if retain_hours is None:
            return str(self._jhs.vacuumIndex(name).toJson())
        return str(self._jhs.vacuumIndex(name, float(retain_hours)).toJson())

    def delete_index(self, name: str) -> None:
        self._jhs.deleteIndex(name)

    def restore_index(self, name: str) -> None:
        self._jhs.restoreIndex(name)

    def cancel(self, name: str, force: bool) -> None:
        self._jhs.cancel(name, force)

    def indexes(self) -> DataFrame:
        return python_dataframe(self._jhs.indexes(), self._spark)

    def list_indexes(self) -> DataFrame:
        return python_dataframe(self._jhs.listIndexes(), self._spark)

    def index(self, name: str) -> DataFrame:
        return python_dataframe(self._jhs.index(name), self._spark)

    def explain(self, df: DataFrame, verbose: bool) -> str:
        return str(self._jhs.explain(java_dataframe(df), verbose))

    def why_not(self, df: DataFrame, index_name: str | None) -> str:
        return str(self._jhs.whyNot(java_dataframe(df), index_name))

    def what_if(self, df: DataFrame, configs: Sequence[IndexConfig]) -> str:
        payload = "[" + ",".join(c.to_json() for c in configs) + "]"
        return str(self._jhs.whatIfFromJson(java_dataframe(df), payload))

    def recommend(
        self, workload: Sequence[WorkloadQuery] | None, budget_bytes: int | None, max_indexes: int | None
    ) -> tuple[str, Callable[[], None], dict[str, str]]:
        budget = -1 if budget_bytes is None else budget_bytes
        most = -1 if max_indexes is None else max_indexes
        if workload is None:
            jrecs = self._jhs.recommendRecordedFor(budget, most)
        else:
            jworkload = self._jhs.newWorkload()
            for q in workload:
                if isinstance(q.query, str):
                    jworkload.addSql(q.query, q.weight)
                else:
                    jworkload.add(java_dataframe(q.query), q.label, q.weight)
            jrecs = self._jhs.recommendWorkload(jworkload, budget, most)

        def create_all() -> None:
            jrecs.createAll()

        return str(jrecs.toJson()), create_all, {}

    def recorded_queries(self) -> list[tuple[str, int]]:
        return [(str(q["query"]), int(q["frequency"])) for q in json.loads(str(self._jhs.recordedQueriesJson()))]

    def clear_recorded_queries(self) -> int:
        return int(self._jhs.clearRecordedQueries())


# ---- SQL (Spark Connect) -----------------------------------------------------------------------


def quote_identifier(name: str) -> str:
    """``name`` as a SQL identifier: backquoted, inner backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    """``text`` as a SQL string literal (Spark's backslash escapes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _column_list(columns: Sequence[str]) -> str:
    return "(" + ", ".join(quote_identifier(c) for c in columns) + ")"


def _covering_spec(config: IndexConfig) -> str:
    """``(cols) [INCLUDE (cols)] [WITH (numBuckets = n, lineage = b)]``."""
    spec = _column_list(config.indexed_columns)
    if config.included_columns:
        spec += " INCLUDE " + _column_list(config.included_columns)
    options = []
    if config.num_buckets is not None:
        options.append(f"numBuckets = {config.num_buckets}")
    if config.lineage is not None:
        options.append(f"lineage = {str(config.lineage).lower()}")
    if options:
        spec += " WITH (" + ", ".join(options) + ")"
    return spec


def _sketch_spec(config: DataSkippingIndexConfig) -> str:
    """``USING DATASKIPPING (Kind(expr, param = 'value'), ...)``."""
    specs = []
    for sketch in config.sketches:
        kind = quote_string(sketch.kind) if isinstance(sketch, CustomSketch) else sketch.kind
        params = "".join(f", {k} = {quote_string(v)}" for k, v in sorted(sketch.params().items()))
        specs.append(f"{kind}({sketch.expr}{params})")
    return "USING DATASKIPPING (" + ", ".join(specs) + ")"


def create_statement(config: KindConfig, source: str) -> str:
    """The ``CREATE HYPERSPACE INDEX`` statement building ``config`` over ``source`` (SQL text)."""
    head = f"CREATE HYPERSPACE INDEX {quote_identifier(config.name)} ON {source} "
    if isinstance(config, IndexConfig):
        return head + _covering_spec(config)
    if isinstance(config, DataSkippingIndexConfig):
        return head + _sketch_spec(config)
    return head + f"USING KIND {quote_string(config.kind_name)} CONFIG {quote_string(config.to_json())}"


# A Hyperspace exception thrown on the Connect server arrives as pyspark's UnknownException whose
# message starts with the JVM class in parentheses (the gRPC error's reason).
_SERVER_ERROR = re.compile(r"^\((io\.hyperspace\.[\w.$]+)\) (.*)$", re.DOTALL)


def _hyperspace_error(error: Exception) -> exceptions.HyperspaceException | None:
    message = getattr(error, "_message", None) or str(error)
    match = _SERVER_ERROR.match(message.strip())
    if match is None:
        return None
    class_name, text = match.group(1), match.group(2)
    py_class = getattr(exceptions, class_name.rsplit(".", 1)[-1], None)
    if not (isinstance(py_class, type) and issubclass(py_class, exceptions.HyperspaceException)):
        py_class = exceptions.HyperspaceException
    return py_class(text, java_class=class_name)


def _not_installed_message() -> str:
    return (
        "The Spark Connect server does not have Hyperspace installed (Hyperspace's SQL statements "
        "do not parse there). Start the server with the jar and the extension: "
        "start-connect-server.sh --jars <path to hyperspace-spark*.jar> "
        f"--conf spark.sql.extensions={EXTENSION_CLASS} (the jar ships in the hyperspace-spark "
        "wheel: python -c 'import hyperspace; print(hyperspace.jar_path())')."
    )


class SqlBackend:
    """Hyperspace's SQL statements run with ``spark.sql`` — for Spark Connect sessions.

    A DataFrame argument reaches the server as a temporary view over its plan, named uniquely
    and dropped afterwards; statements read it as ``ON <view>`` or ``TABLE <view>``.
    """

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._status: dict[str, Any] | None = None

    def _sql(self, statement: str) -> DataFrame:
        from pyspark.errors import ParseException

        try:
            return self._spark.sql(statement)
        except ParseException as error:
            # Hyperspace's statements are recognized by their first words; Spark reporting a
            # syntax error for one means the server's parser is Spark's alone.
            if "HYPERSPACE" in str(error).upper() and "Cannot parse Hyperspace statement" not in str(error):
                raise exceptions.HyperspaceNotLoadedError(_not_installed_message()) from None
            raise
        except Exception as error:
            translated = _hyperspace_error(error)
            if translated is not None:
                raise translated from None
            raise

    def _rows(self, statement: str) -> list[Any]:
        return self._sql(statement).collect()

    def _one(self, statement: str) -> Any:
        return self._rows(statement)[0][0]

    @contextmanager
    def _view(self, df: DataFrame, what: str = "The DataFrame") -> Iterator[str]:
        # A temporary view lives in the session that creates it: one of a classic session, or of
        # another Connect session, would be created there and not be found here.
        if getattr(df, "sparkSession", None) is not self._spark:
            raise exceptions.HyperspaceException(
                f"{what} is a DataFrame of another Spark session: over Spark Connect a DataFrame reaches "
                "the server as a temporary view of this session. Build it from this session, or pass its "
                "SQL text."
            )
        name = f"hyperspace_df_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(name)
        try:
            yield quote_identifier(name)
        finally:
            self._spark.catalog.dropTempView(name)

    def _with_view(self, df: DataFrame, statement: Callable[[str], R]) -> R:
        with self._view(df) as view:
            return statement(view)

    def _status_row(self) -> dict[str, Any]:
        if self._status is None:
            self._status = self._rows("SHOW HYPERSPACE STATUS")[0].asDict()
        return self._status

    def version(self) -> str:
        return str(self._status_row()["version"])

    def spark_version(self) -> str:
        return str(self._status_row()["sparkVersion"])

    def system_path(self) -> str:
        return str(self._rows("SHOW HYPERSPACE STATUS")[0]["systemPath"])

    def enable(self) -> None:
        self._status_row()  # the extension must be installed, as the JVM's enable checks
        self._spark.conf.set(APPLY_ENABLED_KEY, "true")

    def disable(self) -> None:
        self._spark.conf.set(APPLY_ENABLED_KEY, "false")

    def is_enabled(self) -> bool:
        try:
            return bool(self._rows("SHOW HYPERSPACE STATUS")[0]["enabled"])
        except exceptions.HyperspaceNotLoadedError:
            return False

    def create_index(self, df: DataFrame, config: KindConfig) -> None:
        self._with_view(df, lambda view: self._rows(create_statement(config, view)))

    def index_kinds(self) -> list[str]:
        return [str(r[0]) for r in self._rows("SHOW HYPERSPACE INDEX KINDS")]

    @staticmethod
    def _stats_json(rows: list[Any]) -> str:
        return json.dumps([item for r in rows for item in json.loads(r["detail"])])

    def last_query_skipping_stats_json(self) -> str:
        return self._stats_json(self._rows("SHOW HYPERSPACE SKIPPING STATS"))

    def skipping_stats_json(self, df: DataFrame) -> str:
        return self._with_view(
            df, lambda view: self._stats_json(self._rows(f"SHOW HYPERSPACE SKIPPING STATS FOR TABLE {view}"))
        )

    def _maintenance(self, statement: str) -> str:
        return json.dumps(self._rows(statement)[0].asDict())

    def refresh_index_json(self, name: str, mode: str) -> str:
        return self._maintenance(f"REFRESH HYPERSPACE INDEX {quote_identifier(name)} {_mode(mode)}")

    def optimize_index_json(self, name: str, mode: str) -> str:
        return self._maintenance(f"OPTIMIZE HYPERSPACE INDEX {quote_identifier(name)} {_mode(mode)}")

    def vacuum_index_json(self, name: str, retain_hours: float | None) -> str:
        retain = "" if retain_hours is None else f" RETAIN {float(retain_hours)!r} HOURS"
        return self._maintenance(f"VACUUM HYPERSPACE INDEX {quote_identifier(name)}{retain}")

    def delete_index(self, name: str) -> None:
        self._rows(f"DROP HYPERSPACE INDEX {quote_identifier(name)}")

    def restore_index(self, name: str) -> None:
        self._rows(f"RESTORE HYPERSPACE INDEX {quote_identifier(name)}")

    def cancel(self, name: str, force: bool) -> None:
        self._rows(f"CANCEL HYPERSPACE INDEX {quote_identifier(name)}{' FORCE' if force else ''}")

    def indexes(self) -> DataFrame:
        return self._sql("SHOW HYPERSPACE INDEXES")

    def list_indexes(self) -> DataFrame:
        return self._sql("SHOW HYPERSPACE INDEX SUMMARY")

    def index(self, name: str) -> DataFrame:
        return self._sql(f"DESCRIBE HYPERSPACE INDEX {quote_identifier(name)}")

    def explain(self, df: DataFrame, verbose: bool) -> str:
        keyword = " VERBOSE" if verbose else ""
        return self._with_view(df, lambda view: str(self._one(f"EXPLAIN HYPERSPACE{keyword} TABLE {view}")))

    def why_not(self, df: DataFrame, index_name: str | None) -> str:
        which = "" if index_name is None else f" INDEX {quote_identifier(index_name)}"
        return self._with_view(df, lambda view: str(self._one(f"EXPLAIN HYPERSPACE WHY NOT{which} TABLE {view}")))

    def what_if(self, df: DataFrame, configs: Sequence[IndexConfig]) -> str:
        specs = ", ".join(f"INDEX {quote_identifier(c.name)} {_covering_spec(c)}" for c in configs)
        return self._with_view(df, lambda view: str(self._one(f"EXPLAIN HYPERSPACE WHAT IF {specs} TABLE {view}")))

    def recommend(
        self, workload: Sequence[WorkloadQuery] | None, budget_bytes: int | None, max_indexes: int | None
    ) -> tuple[str, Callable[[], None], dict[str, str]]:
        clauses = "".join(
            ([f" BUDGET {budget_bytes}"] if budget_bytes is not None else [])
            + ([f" LIMIT {max_indexes}"] if max_indexes is not None else [])
            + [" WITH REJECTED"]
        )
        labels: dict[str, str] = {}
        if workload is None:
            rows = self._rows(f"SHOW HYPERSPACE RECOMMENDATIONS{clauses} FOR RECORDED QUERIES")
        else:
            with ExitStack() as views:
                # A DataFrame reaches the server as a temporary view, its query `TABLE <view>`.
                texts = [
                    q.query
                    if isinstance(q.query, str)
                    else f"TABLE {views.enter_context(self._view(q.query, f'Workload {q.label}'))}"
                    for q in workload
                ]
                labels = {t: q.label for t, q in zip(texts, workload, strict=True) if not isinstance(q.query, str)}
                queries = ", ".join(
                    f"{quote_string(t)} WEIGHT {q.weight!r}" for t, q in zip(texts, workload, strict=True)
                )
                rows = self._rows(f"SHOW HYPERSPACE RECOMMENDATIONS{clauses} FOR {queries}")

        def candidate(r: Any) -> dict[str, Any]:
            # What a recommended index's row and a rejected candidate's row share.
            shared = {k: r[k] for k in ("name", "kind", "config", "source", "estimatedSizeBytes")}
            return shared | {k: list(r[k]) for k in ("indexedColumns", "includedColumns")}

        indexes = [
            candidate(r)
            | {k: r[k] for k in ("rank", "sourceSql", "estimatedBuildBytes", "benefit")}
            | {"queries": json.loads(r["evidence"])}
            for r in rows
            if r["reason"] is None
        ]
        rejected = [
            candidate(r) | {"reason": r["reason"], "detail": r["detail"]} for r in rows if r["reason"] is not None
        ]
        payload = json.dumps(
            {"indexes": indexes, "rejected": rejected, "budgetBytes": budget_bytes, "maxIndexes": max_indexes}
        )

        def create_all() -> None:
            # Checked for all before building any, so a refusal leaves nothing half done.
            for i in indexes:
                if i["sourceSql"] is None:
                    raise exceptions.HyperspaceException(
                        f"Cannot create recommended index '{i['name']}' over Spark Connect: its source "
                        f"({i['source']}) has no SQL name (a CREATE HYPERSPACE INDEX ... ON names one table "
                        "or one directory). Nothing was built. Build it with hs.create_index(<a DataFrame "
                        "reading that source>, its config)."
                    )
            for i in indexes:
                config = recommended_config(
                    i["kind"], i["config"], str(i["name"]), i["indexedColumns"], i["includedColumns"]
                )
                self._rows(create_statement(cast(KindConfig, config), str(i["sourceSql"])))

        return payload, create_all, labels

    def recorded_queries(self) -> list[tuple[str, int]]:
        return [(str(r["query"]), int(r["frequency"])) for r in self._rows("SHOW HYPERSPACE RECORDED QUERIES")]

    def clear_recorded_queries(self) -> int:
        return int(self._rows("CLEAR HYPERSPACE RECORDED QUERIES")[0]["cleared"])


def _mode(mode: object) -> str:
    """A refresh or optimize mode as a SQL string: the JVM checks it, with the API's message."""
    return quote_string(str(mode))
