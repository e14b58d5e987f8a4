"""TPC-DS with and without indexes, on a workload no one here tuned (issue #55).

Data: ``tpcgen-cli tpcds`` (benchmarks/tpcds_data.py), every table a temp view over its Parquet
files. Queries: Spark's own TPC-DS query texts (``tpcds/q*.sql``, 103 of them: q1-q99 with q14,
q23, q24 and q39 in two parts each), read at run time from the running Spark line's
``spark-sql_2.13-<version>-test-sources.jar`` from Maven Central, the jar build.sbt's
``sqlCorpusJar`` fetches for the SQL corpus suite. They are Apache Spark's (Apache License 2.0,
derived from the TPC-DS specification's query templates) and are not kept in this repository.

Indexes, two sets, each in its own system path: the advisor's own choice over the queries run
(``Hyperspace.recommend`` within ``--budget``, built with ``create_all``; a query the advisor
cannot analyse is left out of the workload with its reason, and the rest go on), and a small
hand-picked set (covering indexes on the date_dim, item and customer keys the queries join and
filter on). Each query runs without indexes, with the advisor's and with the hand-picked ones,
interleaved in one session: a warm-up each, then ``--runs`` rounds, rows compared (sorted) with
the no-index rows in every run — a mismatch or an error is recorded as a failure of that query
and the suite goes on. Reported per query: median ratios and the plan facts of each plan
(shuffles, broadcasts, reused exchanges and subqueries, join types, bytes the scans read from
their SQL metrics, the indexes read) and the load average after it."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import DataFrame, SparkSession

from benchmarks.context import BenchContext
from benchmarks.harness import canonical_rows, plan_facts
from benchmarks.tpcds_data import TABLES, TpcdsLake, prepare
from hyperspace import Hyperspace, HyperspaceConfig, IndexConfig, disable_hyperspace, enable_hyperspace

LICENCE = (
    "Query texts: Apache Spark's TPC-DS queries (sql/core/src/test/resources/tpcds/, read from "
    "spark-sql_2.13-{version}-test-sources.jar), Apache License 2.0; not kept in this repository."
)
# The hand-picked set: covering indexes on the keys the queries join date_dim, item and customer
# on (every column included, so any query's columns are covered), and on the date_dim columns
# most queries filter on (with the columns those queries read from date_dim).
DATE_FILTER_COLUMNS = ["d_date_sk", "d_date", "d_year", "d_moy", "d_qoy", "d_dom", "d_dow", "d_week_seq"]
HANDPICKED = [
    ("date_dim", "dd_date_sk", ["d_date_sk"], None),
    ("date_dim", "dd_year", ["d_year"], [c for c in DATE_FILTER_COLUMNS + ["d_month_seq"] if c != "d_year"]),
    ("date_dim", "dd_month_seq", ["d_month_seq"], DATE_FILTER_COLUMNS),
    ("item", "item_sk", ["i_item_sk"], None),
    ("customer", "customer_sk", ["c_customer_sk"], None),
]
JOINS = ("SortMergeJoin", "BroadcastHashJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin", "CartesianProduct")
VARIANTS = ("spark", "advisor", "handpicked")


def _loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def query_jar(version: str | None = None) -> Path:
    """Spark's spark-sql test-sources jar of this line: ``HYPERSPACE_SQL_CORPUS_JAR`` when set (sbt
    sets it for the Scala tests), else where the build's coursier cache keeps it."""
    version = version or pyspark.__version__
    if os.environ.get("HYPERSPACE_SQL_CORPUS_JAR"):
        jar = Path(os.environ["HYPERSPACE_SQL_CORPUS_JAR"])
    else:
        cache = Path(os.environ.get("HS_CACHE", Path.home() / ".cache" / "hyperspace-build"))
        jar = (
            cache
            / "coursier-home/cache/https/repo1.maven.org/maven2/org/apache/spark/spark-sql_2.13"
            / version
            / f"spark-sql_2.13-{version}-test-sources.jar"
        )
    if not jar.is_file():
        raise RuntimeError(
            f"Spark's TPC-DS queries: no {jar}. The build fetches it (`make sql-corpus-jar`, or the Scala "
            "tests' sbt sqlCorpusJar task); or set HYPERSPACE_SQL_CORPUS_JAR to a spark-sql test-sources jar."
        )
    return jar


def _natural(name: str) -> tuple[int, str]:
    m = re.fullmatch(r"q(\d+)(\w*)", name)
    return (int(m.group(1)), m.group(2)) if m else (10**6, name)


def load_queries(jar: Path) -> dict[str, str]:
    """name (q1 ... q99, q14a, ...) -> SQL text, from the jar's ``tpcds/q*.sql``, in query order."""
    with zipfile.ZipFile(jar) as z:
        texts = {
            Path(n).stem: z.read(n).decode("utf-8").strip().rstrip(";").strip()
            for n in z.namelist()
            if re.fullmatch(r"tpcds/q\d+[a-z]?\.sql", n)
        }
    if not texts:
        raise RuntimeError(f"{jar} holds no tpcds/q*.sql")
    return dict(sorted(texts.items(), key=lambda kv: _natural(kv[0])))


def plan_shape(df: DataFrame) -> dict[str, Any]:
    """Shuffles, broadcasts, reused exchanges and subqueries, joins by type and the bytes the scans
    read (their ``filesSize`` metric) of ``df``'s executed plan, subqueries included (walked from
    Python: adaptive query stages and subqueries are entered, a reused exchange is not)."""
    jvm = df.sparkSession.sparkContext._jvm
    counts: Counter[str] = Counter()
    joins: Counter[str] = Counter()
    bytes_read = 0
    seen_subqueries: set[int] = set()

    def walk(node: Any) -> None:
        nonlocal bytes_read
        name = str(node.nodeName())
        if name == "AdaptiveSparkPlan":
            walk(node.executedPlan())
            return
        if name.endswith("QueryStage"):
            walk(node.plan())
            return
        if name == "Exchange":
            counts["shuffles"] += 1
        elif name == "BroadcastExchange":
            counts["broadcasts"] += 1
        elif name == "ReusedExchange":
            counts["reusedExchanges"] += 1
        elif name == "ReusedSubquery":
            counts["reusedSubqueries"] += 1
        elif name.startswith("Sort") and not name.startswith("SortMergeJoin") and not name.startswith("SortAggregate"):
            counts["sorts"] += 1
        for join in JOINS:
            if name.startswith(join):
                joins[join] += 1
        subqueries = node.subqueries()
        for i in range(subqueries.size()):
            sub = subqueries.apply(i)
            key = int(jvm.java.lang.System.identityHashCode(sub))
            if key not in seen_subqueries:
                seen_subqueries.add(key)
                counts["subqueries"] += str(sub.nodeName()) != "ReusedSubquery"
                walk(sub)
        children = node.children()
        if children.size() == 0:
            size = node.metrics().get("filesSize")
            if size.isDefined():
                bytes_read += int(size.get().value())
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    return {
        "shuffles": counts["shuffles"],
        "broadcasts": counts["broadcasts"],
        "reusedExchanges": counts["reusedExchanges"],
        "subqueries": counts["subqueries"],
        "reusedSubqueries": counts["reusedSubqueries"],
        "sorts": counts["sorts"],
        "joins": dict(sorted(joins.items())),
        "bytesRead": bytes_read,
    }


def _facts(spark: SparkSession, df: DataFrame) -> dict[str, Any]:
    shape = plan_shape(df)
    shape["indexes"] = plan_facts(spark, df)["indexes"]
    return shape


def _oneline(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _parse_bytes(value: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", value.lower())
    if not m:
        raise ValueError(f"--budget: not a size: {value!r} (e.g. 2g, 500m, 1048576)")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def _recommend(
    hs: Hyperspace, queries: dict[str, str], budget: int, log: Any
) -> tuple[Any, dict[str, str], float, str | None]:
    """The advisor over ``queries``: its recommendations, the queries left out of the workload with
    their reason (one that does not analyse), its run time, and its error if it failed otherwise."""
    skipped: dict[str, str] = {}
    workload = dict(queries)
    started = time.perf_counter()
    while workload:
        try:
            return (
                hs.recommend(list(workload.values()), budget_bytes=budget),
                skipped,
                time.perf_counter() - started,
                None,
            )
        except Exception as e:  # noqa: BLE001 - the advisor's failure is recorded, the suite goes on
            message = str(e)
            failing = [q for q, text in workload.items() if f"'{text}'" in message or f"'{text.strip()}'" in message]
            if len(failing) != 1:
                log(f"  advisor failed: {message[:300]}")
                return None, skipped, time.perf_counter() - started, message[:2000]
            reason = re.sub(r"\s+", " ", message.replace(workload[failing[0]], failing[0]))[:500]
            skipped[failing[0]] = reason
            log(f"  advisor: {failing[0]} left out of the workload: {reason[:200]}")
            del workload[failing[0]]
    return None, skipped, time.perf_counter() - started, "no query of the workload could be analysed"


def _analyses(spark: SparkSession, text: str) -> str | None:
    """None when Spark analyses ``text``, else why not (the query cannot run in either variant)."""
    try:
        spark.sql(text)
        return None
    except Exception as e:  # noqa: BLE001
        return _oneline(str(e))[:500]


def _build_handpicked(spark: SparkSession, hs: Hyperspace, frames: dict[str, DataFrame], log: Any) -> list[dict]:
    built = []
    for table, name, indexed, included in HANDPICKED:
        cols = included if included is not None else [c for c in frames[table].columns if c not in indexed]
        start = time.perf_counter()
        hs.create_index(frames[table], IndexConfig(name, indexed, cols))
        row = hs.index(name).first()
        built.append(
            {
                "index": name,
                "table": table,
                "indexed": indexed,
                "included": cols,
                "seconds": time.perf_counter() - start,
                "sizeInBytes": row["sizeInBytes"],
            }
        )
        log(f"  hand-picked {name}: {built[-1]['seconds']:.1f}s, {row['sizeInBytes']:,} bytes")
    return built


def run(ctx: BenchContext) -> dict[str, Any]:
    spark = ctx.spark
    opts = ctx.options
    lake: TpcdsLake = prepare(spark, ctx.data_dir, ctx.sf)
    frames = {t: spark.read.parquet(lake.path(t)) for t in TABLES}
    for table, df in frames.items():
        df.createOrReplaceTempView(table)
    jar = query_jar()
    queries = ctx.selected(load_queries(jar))
    if ctx.only and len(queries) != len(ctx.only):
        raise RuntimeError(f"tpcds: no such query: {', '.join(sorted(ctx.only - set(queries)))}")
    sets = [s for s in VARIANTS[1:] if s in opts.get("index_sets", VARIANTS[1:])]
    source_bytes = lake.source_bytes()
    budget = _parse_bytes(opts["budget"]) if opts.get("budget") else source_bytes
    load_before = _loadavg()

    # Queries Spark itself cannot analyse are reported, never run.
    not_analysed = {q: why for q in queries if (why := _analyses(spark, queries[q])) is not None}
    runnable = {q: t for q, t in queries.items() if q not in not_analysed}

    conf = HyperspaceConfig(spark)
    conf.num_buckets = ctx.buckets
    hs = Hyperspace(spark)
    paths = {s: str(ctx.work_dir / f"tpcds-{s}-indexes") for s in sets}
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    result: dict[str, Any] = {
        "sf": ctx.sf,
        "runs": ctx.runs,
        "licence": LICENCE.format(version=pyspark.__version__),
        "queryJar": jar.name,
        "sourceBytes": source_bytes,
        "indexSets": sets,
        "notAnalysed": not_analysed,
    }
    advisor_queries: dict[str, list[str]] = {}
    if "advisor" in sets:
        conf.system_path = paths["advisor"]
        ctx.log(f"tpcds: the advisor over {len(runnable)} queries, budget {budget:,} bytes")
        recs, skipped, seconds, error = _recommend(hs, runnable, budget, ctx.log)
        label = {t: q for q, t in runnable.items()}
        advisor: dict[str, Any] = {"seconds": seconds, "budgetBytes": budget, "skipped": skipped, "error": error}
        if recs is not None:
            ctx.log(f"  advisor: {seconds:.1f}s, {len(recs)} indexes")
            started = time.perf_counter()
            recs.create_all()
            advisor["buildSeconds"] = time.perf_counter() - started
            sizes = {r["name"]: r["sizeInBytes"] for r in hs.indexes().select("name", "sizeInBytes").collect()}
            advisor["elapsedMs"] = recs.elapsed_ms
            advisor["costBefore"], advisor["costAfter"] = recs.workload_cost_before, recs.workload_cost_after
            advisor["indexes"] = [
                {
                    "name": r.config.name,
                    "kind": r.kind,
                    "source": r.source,
                    "indexed": list(r.indexed_columns),
                    "included": list(r.included_columns),
                    "estimatedSizeBytes": r.estimated_size_bytes,
                    "sizeInBytes": sizes.get(r.config.name),
                    "queries": [label.get(e.query, label.get(e.query.strip(), e.query[:40])) for e in r.queries],
                }
                for r in recs.indexes
            ]
            for r in advisor["indexes"]:
                for q in r["queries"]:
                    advisor_queries.setdefault(q, []).append(r["name"])
            ctx.log(f"  advisor's indexes built in {advisor['buildSeconds']:.1f}s")
        else:  # nothing to compare: the advisor's failure is reported, the other sets still run
            sets.remove("advisor")
        result["advisor"] = advisor
    if "handpicked" in sets:
        conf.system_path = paths["handpicked"]
        ctx.log("tpcds: building the hand-picked indexes")
        result["handpicked"] = _build_handpicked(spark, hs, frames, ctx.log)

    def use(variant: str) -> None:
        if variant == "spark":
            disable_hyperspace(spark)
        else:
            conf.system_path = paths[variant]
            enable_hyperspace(spark)

    variants = ["spark"] + sets
    timed = f"{ctx.runs} runs (interleaved)" if ctx.runs else "a timed warm-up"
    ctx.log(f"tpcds: {len(runnable)} queries x {len(variants)} variants x {timed}")
    measured: dict[str, Any] = {}
    for name, sql in runnable.items():
        entry = _measure(spark, sql, variants, use, ctx.runs)
        if name in advisor_queries:
            entry["advisorIndexes"] = advisor_queries[name]
        measured[name] = entry
        # What has run so far, kept should the process die before the report (an OOM kill at SF1).
        result["queries"] = measured
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        (ctx.work_dir / "tpcds-progress.json").write_text(json.dumps(result, indent=2))
        per, failures = entry["variants"], entry["failures"]
        line = ", ".join(f"{v} {per[v]['median']:.2f}s" for v in variants if "median" in per[v])
        ctx.log(f"  {name}: {line}" + (f"; FAILED: {failures[0]}" if failures else ""))
    disable_hyperspace(spark)
    result["queries"] = measured
    result["loadAverageBefore"], result["loadAverageAfter"] = load_before, _loadavg()
    return result


def _measure(spark: SparkSession, sql: str, variants: list[str], use: Any, runs: int) -> dict[str, Any]:
    """One query under every variant: a warm-up each (its plan facts, and Spark's rows that every
    later run is compared with), then ``runs`` rounds, the variants' order rotating each round
    (``runs=0``: the warm-ups are timed). An error or a mismatch is recorded, never raised."""
    per: dict[str, Any] = {v: {"seconds": [], "facts": None} for v in variants}
    failures: list[str] = []
    expected: list[str] | None = None

    def once(v: str, run_label: str, keep_facts: bool) -> float | None:
        nonlocal expected
        use(v)
        start = time.perf_counter()
        try:
            df = spark.sql(sql)
            rows = df.collect()
        except Exception as e:  # noqa: BLE001 - recorded as the query's failure
            failures.append(f"{v} {run_label}: {_oneline(str(e))[:300]}")
            return None
        seconds = time.perf_counter() - start
        if keep_facts:
            per[v]["facts"] = _facts(spark, df)
            per[v]["rows"] = len(rows)
        got = canonical_rows(rows)
        if v == "spark" and expected is None:
            expected = got
        elif expected is not None and got != expected:
            failures.append(f"{v} {run_label}: rows differ from Spark's without indexes")
        return seconds

    for v in variants:
        s = once(v, "warm-up", True)
        if runs == 0 and s is not None:
            per[v]["seconds"].append(s)
    for r in range(runs):
        for v in variants[r % len(variants) :] + variants[: r % len(variants)]:
            s = once(v, f"run {r + 1}", False)
            if s is not None:
                per[v]["seconds"].append(s)
    for v in variants:
        if per[v]["seconds"]:
            per[v]["median"] = statistics.median(per[v]["seconds"])
    return {"variants": per, "failures": failures, "loadAverage": _loadavg()}


def _median_cell(per: dict[str, Any], v: str) -> str:
    return f"{per[v]['median']:.3f}" if "median" in per[v] else "—"


def _ratio(entry: dict[str, Any], variant: str) -> float | None:
    per = entry["variants"]
    if "median" not in per.get("spark", {}) or "median" not in per.get(variant, {}) or entry["failures"]:
        return None
    return float(per["spark"]["median"] / per[variant]["median"])


def _shape(f: dict[str, Any] | None) -> str:
    if not f:
        return "—"
    joins = " ".join(
        f"{k.replace('Join', '').replace('BroadcastHash', 'BHJ').replace('SortMerge', 'SMJ')}×{n}"
        for k, n in f["joins"].items()
    )
    return (
        f"{f['shuffles']} sh, {f['broadcasts']} bc, {f['reusedExchanges']} reused ex, "
        f"{f['reusedSubqueries']}/{f['subqueries']} reused sq, {joins or 'no join'}, {f['bytesRead'] / 1e6:.1f} MB"
    )


def markdown(result: dict[str, Any]) -> list[str]:
    """The report section: summary, worst ratios with their plan facts, every query."""
    sets = result["indexSets"]
    queries = result["queries"]
    lb, la = result["loadAverageBefore"], result["loadAverageAfter"]
    lines = [
        f"## TPC-DS (SF {result['sf']:g})",
        "",
        f"{len(queries)} queries, "
        + (
            "each once per variant (a cold run timed)"
            if result["runs"] == 0
            else f"{result['runs']} interleaved timed runs per variant after a warm-up (medians)"
        )
        + "; rows compared with Spark's "
        f"without indexes in every run. Load average {' / '.join(f'{x:.2f}' for x in lb)} before, "
        f"{' / '.join(f'{x:.2f}' for x in la)} after (1/5/15 min). {result['licence']}",
        "",
    ]
    failed = {q: e["failures"] for q, e in queries.items() if e["failures"]}
    lines.append(
        f"- Results equal in {len(queries) - len(failed)} of {len(queries)} queries"
        + (f"; failed: {', '.join(failed)}" if failed else "")
        + "."
    )
    for q, why in result["notAnalysed"].items():
        lines.append(f"- {q}: not run, Spark does not analyse it: {why[:200]}")
    a = result.get("advisor")
    if a is not None:
        if a.get("error"):
            lines.append(f"- Advisor failed after {a['seconds']:.1f}s: {a['error'][:300]}")
        else:
            kinds = Counter(i["kind"] for i in a["indexes"])
            lines.append(
                f"- Advisor: {a['seconds']:.1f}s over {len(queries) - len(a['skipped'])} queries, budget "
                f"{a['budgetBytes']:,} bytes (source {result['sourceBytes']:,}); {len(a['indexes'])} indexes ("
                + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
                + f"), built by create_all in {a['buildSeconds']:.1f}s, "
                f"{sum(i['sizeInBytes'] or 0 for i in a['indexes']):,} bytes."
            )
        for q, why in a["skipped"].items():
            lines.append(f"- Advisor left {q} out of its workload: {why[:300]}")
    if result.get("handpicked"):
        lines.append(
            "- Hand-picked: "
            + ", ".join(
                f"{h['index']} ({h['table']} on {', '.join(h['indexed'])}, {h['sizeInBytes']:,} bytes, {h['seconds']:.1f}s)"
                for h in result["handpicked"]
            )
            + "."
        )
    for s in sets:
        ratios = {q: r for q, e in queries.items() if (r := _ratio(e, s)) is not None}
        used = {q: r for q, r in ratios.items() if queries[q]["variants"][s]["facts"]["indexes"]}
        if not ratios:
            continue
        total_spark = sum(queries[q]["variants"]["spark"]["median"] for q in ratios)
        total = sum(queries[q]["variants"][s]["median"] for q in ratios)
        lines.append(
            f"- {s}: total of medians {total_spark:.1f}s without indexes → {total:.1f}s ({total_spark / total:.2f}×); "
            f"median ratio {statistics.median(ratios.values()):.2f}× over all, "
            + (
                f"{statistics.median(used.values()):.2f}× over the {len(used)} queries reading an index; "
                f"{sum(r < 0.95 for r in used.values())} of them below 0.95×."
                if used
                else "no query read an index."
            )
        )
    for s in sets:
        ratios = {q: r for q, e in queries.items() if (r := _ratio(e, s)) is not None}
        worst = sorted(ratios.items(), key=lambda kv: kv[1])[:8]
        if not worst:
            continue
        lines += [
            "",
            f"### Worst ratios, {s} (no index / with index)",
            "",
            "| query | ratio | no index plan | with index plan | indexes read |",
            "|---|---|---|---|---|",
        ]
        for q, r in worst:
            per = queries[q]["variants"]
            lines.append(
                f"| {q} | {r:.2f}× | {_shape(per['spark']['facts'])} | {_shape(per[s]['facts'])} "
                f"| {', '.join(per[s]['facts']['indexes']) or '—'} |"
            )
    head = (
        "| query | no index s | "
        + " | ".join(f"{s} s | ratio" for s in sets)
        + " | plans: no index → "
        + " → ".join(sets)
        + " | load |"
    )
    lines += [
        "",
        "### Every query",
        "",
        "Plan facts: shuffles, broadcasts, reused exchanges, reused/all "
        "subqueries, joins (SMJ sort-merge, BHJ broadcast hash, ...), MB the scans read, of the final "
        "adaptive plan (a join adaptive execution replaced by an empty relation shows no join, no bytes).",
        "",
        head,
        "|" + "---|" * (4 + 2 * len(sets)),
    ]
    for q, e in queries.items():
        per = e["variants"]
        cells = [f"{_median_cell(per, s)} | " + (f"{r:.2f}×" if (r := _ratio(e, s)) is not None else "—") for s in sets]
        plans = "<br>".join(
            _shape(per[v]["facts"])
            + (f" [{', '.join(per[v]['facts']['indexes'])}]" if per[v]["facts"] and per[v]["facts"]["indexes"] else "")
            for v in ["spark"] + sets
        )
        fail = f" **failed**: {e['failures'][0][:120]}" if e["failures"] else ""
        lines.append(
            f"| {q} | {_median_cell(per, 'spark')} | "
            + " | ".join(cells)
            + f" | {plans}{fail} | {e['loadAverage'][0]:.1f} |"
        )
    lines.append("")
    return lines


def chart(path: Path, result: dict[str, Any], env: dict[str, Any]) -> Path:
    """Per query, no-index time / indexed time of each index set (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = result["indexSets"]
    queries = list(result["queries"])
    fig, ax = plt.subplots(figsize=(max(8, 0.22 * len(queries) * max(1, len(sets))), 4.5))
    width = 0.8 / max(1, len(sets))
    for i, s in enumerate(sets):
        ys = [_ratio(result["queries"][q], s) or 0.0 for q in queries]
        ax.bar(
            [x + (i - (len(sets) - 1) / 2) * width for x in range(len(queries))], ys, width=width, label=f"{s} indexes"
        )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(queries)), queries, rotation=90, fontsize=7)
    ax.set_ylabel("no index / with index (×, log)")
    ax.set_title(
        f"TPC-DS SF{result['sf']:g}, Spark {env['spark']} {env['master']}, "
        f"load {result['loadAverageBefore'][0]:.1f}–{result['loadAverageAfter'][0]:.1f}"
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
