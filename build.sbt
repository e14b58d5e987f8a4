// Hyperspace for Spark 4: the JVM extension jar.
//
// Every version comes from versions.properties (shared with the Python package and the
// Makefile). Spark and Delta are `Provided`: the user's Spark supplies them at run time.

import java.util.Properties

lazy val versions: Properties = {
  val props = new Properties()
  val in = new java.io.FileInputStream(file("versions.properties"))
  try props.load(in)
  finally in.close()
  props
}

// The Spark line to build: `-Dhyperspace.spark.line=4.1` (the Makefile's `SPARK=4.1`) or
// HYPERSPACE_SPARK_LINE, else `spark.default`. One line per sbt run: switching lines is a new run.
lazy val sparkLines: Seq[String] = raw("spark.lines").split("\\s+").toSeq
lazy val sparkLine: String = {
  val line = sys.props.get("hyperspace.spark.line").orElse(sys.env.get("HYPERSPACE_SPARK_LINE"))
    .map(_.trim).filter(_.nonEmpty).getOrElse(raw("spark.default"))
  if (!sparkLines.contains(line))
    sys.error(s"Spark line '$line' is not supported; versions.properties lists ${sparkLines.mkString(", ")}")
  line
}

/**
 * The `scala-spark-<first>-<last>` directories under `main` whose range of `spark.lines` includes
 * the line being built; a range naming a line that is not supported fails the build.
 */
def sharedShimRanges(main: File): Seq[File] = {
  val Range = """scala-spark-(\d+\.\d+)-(\d+\.\d+)""".r
  Option(main.listFiles()).toSeq.flatten.sortBy(_.getName).flatMap { dir =>
    dir.getName match {
      case Range(first, last) =>
        val (from, to) = (sparkLines.indexOf(first), sparkLines.indexOf(last))
        if (from < 0 || to < from) sys.error(s"$dir names no range of spark.lines (${sparkLines.mkString(", ")})")
        if (sparkLines.slice(from, to + 1).contains(sparkLine)) Some(dir) else None
      case _ => None
    }
  }
}

def raw(key: String): String =
  Option(versions.getProperty(key)).map(_.trim).getOrElse(sys.error(s"versions.properties has no '$key'"))

/** `key.<line>` when versions.properties pins it per Spark line (spark, scala, delta, ...), else `key`. */
def pinned(key: String): String =
  Option(versions.getProperty(s"$key.$sparkLine")).map(_.trim).getOrElse(raw(key))

lazy val sparkVersion = pinned("spark")
// The patches of the line its jar is checked against and runs on, oldest first (versions.properties).
lazy val sparkPatches: Seq[String] = pinned("spark.patches").split("\\s+").toSeq

// The line's Iceberg Spark runtime, when versions.properties pins one (`iceberg.4.2=none`: Iceberg
// publishes no runtime for that line yet). Iceberg is `Provided` like Delta, and the Iceberg provider
// (scala/src/main/scala-iceberg) is compiled only for lines that pin a runtime: on the others the jar
// has no Iceberg support, and the Iceberg suites (IcebergSourceSuite) are excluded from `sbt test`
// below, explicitly, rather than passing without running.
lazy val icebergVersion: Option[String] = Some(pinned("iceberg")).filter(_ != "none")
lazy val icebergSuites = Seq("io.hyperspace.sources.IcebergSourceSuite", "io.hyperspace.sources.IcebergDeletesSuite",
  "io.hyperspace.sources.IcebergDataSkippingSuite")

// The line's Delta release, when one is built for it (`delta.4.3=none`: none yet). The Delta provider
// and the suites that need Delta on the class path live in scala/src/main/scala-delta and
// scala/src/test/scala-delta, compiled only for lines that pin a Delta: the others' jars have no
// Delta support, and those suites are not part of their build rather than passing without running.
lazy val deltaVersion: Option[String] = Some(pinned("delta")).filter(_ != "none")

// Where the line's Spark comes from (versions.properties `spark.source`): `maven`, or `pyspark` for
// a line whose jars Maven Central does not serve (4.3), whose pyspark sdist's jars are then the
// compile and test class path (tools/spark_patches.py --spark-jars fetches them once into HS_CACHE).
// They are unmanaged jars: on the class path like a Provided dependency, never in the jar or the POM.
lazy val sparkFromPyspark: Boolean = pinned("spark.source") match {
  case "maven" => false
  case "pyspark" => true
  case other => sys.error(s"spark.source.$sparkLine must be maven or pyspark, not '$other'")
}
lazy val pysparkJars: Seq[File] =
  if (!sparkFromPyspark) Nil
  else {
    val python = sys.env.getOrElse("HYPERSPACE_PYTHON", "python3")
    val cache = sys.env.get("HS_CACHE").toSeq.flatMap(c => Seq("--cache", c))
    val cmd = Seq(python, "tools/spark_patches.py", "--spark-jars", sparkVersion) ++ cache
    val dir = file(scala.sys.process.Process(cmd).!!.trim)
    val jars = Option(dir.listFiles()).toSeq.flatten.filter(_.getName.endsWith(".jar")).sortBy(_.getName)
    if (!jars.exists(_.getName.startsWith("spark-sql_"))) sys.error(s"${cmd.mkString(" ")} gave no Spark jars in $dir")
    jars
  }
// Spark's SQL corpus comes from spark-sql's test-sources jar on Maven Central, which a pyspark-sourced
// line does not have: its corpus suite is left out by name.
lazy val corpusSuites = Seq("io.hyperspace.sql.SparkSqlCorpusSuite")

// HYPERSPACE_TEST_SUITES (space-separated class names; the Makefile's line subsets set it): only these
// suites' files are compiled, with the test support (every test file that is not a concrete suite:
// helpers, and the base traits such as HyperspaceSuite), instead of all test sources for a run that
// executes a handful. Unset: every suite.
lazy val onlySuites: Option[Set[String]] =
  sys.env.get("HYPERSPACE_TEST_SUITES").map(_.split("\\s+").filter(_.nonEmpty).map(_.split('.').last + ".scala").toSet)
def isConcreteSuite(f: File): Boolean = {
  val name = f.getName.stripSuffix(".scala")
  name.endsWith("Suite") && IO.readLines(f).exists(_.matches(s"(final )?class $name\\b.*"))
}

// The options Spark's own launcher passes on Java 17 (JavaModuleOptions), needed by any JVM
// that runs Spark: the forked test JVMs here.
lazy val sparkJava17Options = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "--add-modules=jdk.incubator.vector",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true")

// Test JVMs side by side: HYPERSPACE_TEST_JVMS (2 by default, for CI's 2 cores; 1 runs the
// suites one after another in one JVM, as when debugging a suite's interplay with another).
lazy val testJvms: Int = sys.env.get("HYPERSPACE_TEST_JVMS").map { v =>
  scala.util.Try(v.trim.toInt).toOption.filter(_ >= 1).getOrElse(
    sys.error(s"HYPERSPACE_TEST_JVMS must be a number >= 1, not '$v'"))
}.getOrElse(2)

// sbt's default runs one forked test group at a time (Tags.ForkedTestGroup limited to 1).
Global / concurrentRestrictions := Seq(
  Tags.limitAll(math.max(EvaluateTask.SystemProcessors, testJvms)),
  Tags.limit(Tags.ForkedTestGroup, testJvms),
  Tags.exclusiveGroup(Tags.Clean))

// S3 in tests (io.hyperspace.log.S3LogStoreSuite, tests/test_s3.py): hadoop-aws of the line's
// Hadoop and the AWS SDK v2 modules S3A calls, at the SDK version that Hadoop release is built with.
// Not the SDK bundle hadoop-aws declares (hundreds of MB); netty is left to Spark's (the async client
// S3A builds for the transfer manager is never used by the tests' requests). S3A loads the analytics
// stream's classes (analyticsaccelerator-s3, which hadoop-aws brings) even when it is not chosen.
// On the test class path whenever the suite is compiled: in every full test run (`make test` runs the
// suite against moto, `make test-s3` and `make test-full` against SeaweedFS: HYPERSPACE_S3_SERVER,
// testing/S3Server), not in a line subset (HYPERSPACE_TEST_SUITES) that leaves the suite out, which
// then resolves none of them.
lazy val s3Tests: Boolean = onlySuites.forall(_.contains("S3LogStoreSuite.scala"))
lazy val s3aTestDependencies: Seq[ModuleID] = {
  val sdk = pinned("awssdk")
  Seq(
    ("org.apache.hadoop" % "hadoop-aws" % pinned("hadoop") % Test)
      .excludeAll(ExclusionRule("software.amazon.awssdk"), ExclusionRule("software.amazon.awssdk.crt"),
        ExclusionRule("org.wildfly.openssl"), ExclusionRule("io.netty")),
    ("software.amazon.awssdk" % "s3" % sdk % Test).excludeAll(ExclusionRule("io.netty")),
    ("software.amazon.awssdk" % "s3-transfer-manager" % sdk % Test).excludeAll(ExclusionRule("io.netty")),
    ("software.amazon.awssdk" % "sts" % sdk % Test).excludeAll(ExclusionRule("io.netty")))
}

// Spark's own SQL test corpus (`sql-tests/inputs/` of the line's spark-sql test-sources jar), which
// io.hyperspace.sql.SparkSqlCorpusSuite parses and runs with and without the extension. The jar is
// resolved on its own and handed to the test JVMs by path, never put on the class path: it carries
// Spark's test log4j2.properties and hive-site.xml, and service files naming test classes it does
// not contain, which would break every suite's session.
lazy val sqlCorpusJar = taskKey[Option[File]]("The Spark line's spark-sql test-sources jar (Spark's SQL test corpus)")

// The Maven artifacts of a line: io.hyperspace:hyperspace-spark<line>_2.13:<version>, with its sources
// and Scaladoc jars and a POM in which Spark, Delta and Iceberg are `provided` (the user's Spark
// brings them; `--packages` must not pull a second Spark). `make publish-local` writes every line
// into a Maven repository layout under dist/maven/ (tests/test_maven_artifacts.py reads it there).
// The project has no public source repository yet: HYPERSPACE_SCM_URL (a git URL, as a release
// sets it) fills the POM's <scm> and <url>, which Maven Central requires; without it they are left
// out rather than made up.
lazy val scmUrl: Option[String] = sys.env.get("HYPERSPACE_SCM_URL").map(_.trim).filter(_.nonEmpty)
lazy val publishSettings: Seq[Setting[_]] = Seq(
  description := "Hyperspace for Spark 4: indexes over the files of a data lake that unchanged Spark " +
    "queries use automatically (a SparkSessionExtension).",
  licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
  // Written out rather than through `developers`, whose entries need a URL the project does not have.
  pomExtra :=
    <developers><developer><id>hyperspace-spark</id><name>The Hyperspace for Spark 4 authors</name></developer></developers>,
  homepage := scmUrl.map(u => url(u.stripSuffix(".git"))),
  scmInfo := scmUrl.map(u => ScmInfo(url(u.stripSuffix(".git")), s"scm:git:$u")),
  // Spark brings its Scala: the POM names scala-library `provided` like Spark itself.
  autoScalaLibrary := false,
  libraryDependencies += "org.scala-lang" % "scala-library" % scalaVersion.value % Provided,
  publishMavenStyle := true,
  pomIncludeRepository := (_ => false),
  // A pyspark-sourced line's Spark is unmanaged jars, which a POM never lists: its Spark modules are
  // named `provided` here as every other line's are, so the POM says which Spark the jar is for.
  pomPostProcess := { node =>
    if (!sparkFromPyspark) node
    else {
      val spark = Seq("spark-sql", "spark-core", "spark-catalyst").map { module =>
        <dependency><groupId>org.apache.spark</groupId><artifactId>{
          s"${module}_${scalaBinaryVersion.value}"
        }</artifactId><version>{
          sparkVersion
        }</version><scope>provided</scope></dependency>
      }
      new scala.xml.transform.RuleTransformer(new scala.xml.transform.RewriteRule {
        override def transform(n: scala.xml.Node): Seq[scala.xml.Node] = n match {
          case e: scala.xml.Elem if e.label == "dependencies" => e.copy(child = spark ++ e.child)
          case other => other
        }
      }).transform(node).head
    }
  },
  Test / publishArtifact := false,
  publishTo := Some(MavenCache("dist-maven", baseDirectory.value / "dist" / "maven")),
  // The jar carries the licence beside its classes.
  Compile / packageBin / mappings += (baseDirectory.value / "LICENSE") -> "META-INF/LICENSE",
  Compile / packageSrc / mappings += (baseDirectory.value / "LICENSE") -> "META-INF/LICENSE")

lazy val root = (project in file("."))
  .settings(
    name := s"hyperspace-spark$sparkLine",
    // Keep the dot: the jar is hyperspace-spark4.0_2.13-<version>.jar (sbt would write 4-0).
    moduleName := name.value,
    // Class files per line (target/spark-4.1/...), so building one line never clobbers another's.
    target := baseDirectory.value / "target" / s"spark-$sparkLine",
    organization := "io.hyperspace",
    version := pinned("hyperspace"),
    publishSettings,
    scalaVersion := pinned("scala"),
    // Unused code (imports, private members, locals, parameters, pattern variables) fails the
    // build, in main and test; other warnings stay warnings, so a new Spark line's deprecations
    // do not block compiling against it.
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked",
      "-Wunused:imports,privates,locals,implicits,params,patvars", "-Wconf:cat=unused:e"),
    javacOptions ++= Seq("--release", "17"),

    Compile / scalaSource := baseDirectory.value / "scala" / "src" / "main" / "scala",
    // Spark internals whose shape differs between Spark lines live in the shim directories
    // (docs/architecture.md, "Spark lines"): scala-spark-4.x for what every Spark 4 line shares,
    // scala-spark-<line> for what only the line being built has, and scala-spark-<first>-<last>
    // for what the consecutive lines first..last share (one copy, not one per line).
    // A line needs its own directory or a range including it (4.2 has only ranges: what it has it
    // shares with 4.1 or 4.3), so a line added to spark.lines without shims fails here.
    Compile / unmanagedSourceDirectories ++= {
      val main = baseDirectory.value / "scala" / "src" / "main"
      val (shared, own, ranges) = (main / "scala-spark-4.x", main / s"scala-spark-$sparkLine", sharedShimRanges(main))
      if (!shared.isDirectory) sys.error(s"No shared Spark shims: $shared does not exist")
      if (!own.isDirectory && ranges.isEmpty)
        sys.error(
          s"No Spark shims for Spark $sparkLine: neither $own nor a scala-spark-<first>-<last> range including it exists")
      Seq(shared) ++ Seq(own).filter(_.isDirectory) ++ ranges
    }
      ++ icebergVersion.map(_ => baseDirectory.value / "scala" / "src" / "main" / "scala-iceberg").toSeq
      ++ deltaVersion.map(_ => baseDirectory.value / "scala" / "src" / "main" / "scala-delta").toSeq,
    Compile / resourceDirectory := baseDirectory.value / "scala" / "src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "scala" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "scala" / "src" / "test" / "resources",
    // Test code whose Spark calls differ between lines, in the same layout as main's shims (only the
    // directories that exist: most lines need none).
    Test / unmanagedSourceDirectories ++=
      (Seq("4.x", sparkLine).map { dir =>
        baseDirectory.value / "scala" / "src" / "test" / s"scala-spark-$dir"
      } ++ sharedShimRanges(baseDirectory.value / "scala" / "src" / "test")).filter(_.isDirectory)
        ++ deltaVersion.map(_ => baseDirectory.value / "scala" / "src" / "test" / "scala-delta").toSeq,
    sqlCorpusJar :=
      (if (sparkFromPyspark) None
       else Some {
         val lm = dependencyResolution.value
         val module = ("org.apache.spark" % s"spark-sql_${scalaBinaryVersion.value}" % sparkVersion)
           .classifier("test-sources").intransitive()
         lm.update(lm.wrapDependencyInModule(module, scalaModuleInfo.value),
           sbt.librarymanagement.UpdateConfiguration(),
           sbt.librarymanagement.UnresolvedWarningConfiguration(), streams.value.log) match {
           case Right(report) => report.allFiles.find(_.getName.endsWith("-test-sources.jar")).getOrElse(
               sys.error(s"Resolving $module gave no test-sources jar: ${report.allFiles.mkString(", ")}"))
           case Left(warning) => throw warning.resolveException
         }
       }),

    libraryDependencies ++=
      (if (sparkFromPyspark) Nil
       else Seq(
         "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
         "org.apache.spark" %% "spark-core" % sparkVersion % Provided,
         "org.apache.spark" %% "spark-catalyst" % sparkVersion % Provided)) ++
        deltaVersion.map(v => "io.delta" %% "delta-spark" % v % Provided).toSeq ++
        Seq("org.scalatest" %% "scalatest" % pinned("scalatest") % Test) ++
        (if (s3Tests) s3aTestDependencies else Nil) ++
        icebergVersion.map(v => "org.apache.iceberg" % s"iceberg-spark-runtime-${sparkLine}_2.13" % v % Provided).toSeq,
    // The line's Spark from its pyspark: compile and test class path (the Test configuration extends
    // Compile's unmanaged jars), as Provided is, and not in `update`, so never in the POM.
    Compile / unmanagedJars ++= pysparkJars.map(Attributed.blank),
    // Without an Iceberg runtime for the line, its Iceberg suites cannot run, nor the SQL corpus suite
    // without the corpus jar: they are left out by name.
    Test / unmanagedSources / excludeFilter := {
      def files(suites: Seq[String]) =
        new SimpleFileFilter(f => suites.exists(s => f.getName == s.split('.').last + ".scala"))
      val base = (Test / unmanagedSources / excludeFilter).value
      val withIceberg = if (icebergVersion.isDefined) base else base || files(icebergSuites)
      val withCorpus = if (!sparkFromPyspark) withIceberg else withIceberg || files(corpusSuites)
      onlySuites.fold(withCorpus) { keep =>
        withCorpus || new SimpleFileFilter(f => !keep(f.getName) && isConcreteSuite(f))
      }
    },

    // Generated, not hand-written, so the jar can never disagree with versions.properties.
    Compile / sourceGenerators += Def.task {
      val out = (Compile / sourceManaged).value / "io" / "hyperspace" / "BuildInfo.scala"
      IO.write(out,
        s"""package io.hyperspace
           |
           |/** Versions this jar was built with (generated from versions.properties). */
           |object BuildInfo {
           |  /** The Hyperspace version. */
           |  val version: String = "${version.value}"
           |  /** The Spark version the jar was compiled against. */
           |  val sparkVersion: String = "$sparkVersion"
           |  /** The patches of the line the jar is checked against and accepted on, oldest first (`spark.patches.<line>`). */
           |  val sparkPatches: Seq[String] = Seq(${sparkPatches.map(p => "\"" + p + "\"").mkString(", ")})
           |  /** The Scala version the jar was compiled with. */
           |  val scalaVersion: String = "${scalaVersion.value}"
           |  /** The Delta Lake version the jar was compiled against, when the line has a Delta release. */
           |  val deltaVersion: Option[String] = ${deltaVersion.map(v => "Some(\"" + v + "\")").getOrElse("None")}
           |  /** The Iceberg version the jar was compiled against, when the line has an Iceberg runtime. */
           |  val icebergVersion: Option[String] = ${icebergVersion.map(v => "Some(\"" + v + "\")").getOrElse("None")}
           |}
           |""".stripMargin)
      Seq(out)
    }.taskValue,

    // Spark in forked JVMs: isolation from sbt's class loaders and the Java 17 module options Spark
    // needs. Within a JVM suites run one after another (each owns the JVM's session); the suites
    // are split between `testJvms` JVMs that run side by side (project/TestGroups.scala says why).
    Test / fork := true,
    // Groups in parallel (sbt runs them one by one otherwise); suites within a JVM one by one
    // (testForkedParallel stays false).
    Test / parallelExecution := true,
    Test / testGrouping := TestGroups.split((Test / definedTests).value, testJvms, (Test / forkOptions).value),
    // The parallel collector: suites ran ~11% faster than under G1 (RefreshSuite and
    // DifferentialSuite in one JVM, twice each way, 2026-11-29: 137-139 s against 153-158 s) —
    // short-lived test data, where throughput matters and pauses do not.
    Test / javaOptions ++= sparkJava17Options ++ Seq("-Xmx4g", "-XX:+UseParallelGC", "-Dspark.ui.enabled=false"),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    // Tests that launch separate JVMs need the test class path; Spark stays on loopback; each Spark
    // suite's wall and CPU seconds go to suite-times.tsv (testing/SuiteTimes.scala), which the
    // Makefile clears before a run and .ci/report.py reads; the SQL corpus suite lists every
    // difference it finds in a file, as its failure message shows only the first.
    Test / envVars ++= sqlCorpusJar.value.map(j => "HYPERSPACE_SQL_CORPUS_JAR" -> j.getAbsolutePath).toMap ++ Map(
      "HYPERSPACE_TEST_CLASSPATH" -> (Test / fullClasspath).value.files.mkString(java.io.File.pathSeparator),
      "HYPERSPACE_SUITE_TIMES" -> (target.value / "suite-times.tsv").getAbsolutePath,
      "HYPERSPACE_SQL_CORPUS_DIFFERENCES" -> (target.value / "sql-corpus-differences.txt").getAbsolutePath,
      "SPARK_LOCAL_IP" -> "127.0.0.1")
  )
