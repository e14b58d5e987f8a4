package io.hyperspace.config

import scala.io.Source

import org.apache.hadoop.fs.Path

import io.hyperspace.{HyperspaceException, SparkSessionSuite}

class HyperspaceConfSuite extends SparkSessionSuite {

  test("defaults match the documented table") {
    assert(HyperspaceConf.numBuckets(spark) == 200)
    assert(!HyperspaceConf.lineageEnabled(spark))
    assert(!HyperspaceConf.hybridScanEnabled(spark))
    assert(HyperspaceConf.hybridScanMaxAppendedRatio(spark) == 0.3)
    assert(HyperspaceConf.hybridScanMaxDeletedRatio(spark) == 0.2)
    assert(HyperspaceConf.optimizeFileSizeThreshold(spark) == 256L * 1024 * 1024)
    assert(HyperspaceConf.explainDisplayMode(spark) == "plaintext")
    assert(HyperspaceConf.autoPartitionSketch(spark))
    assert(!HyperspaceConf.applyEnabled(spark))
  }

  test("the system path defaults to <warehouse>/indexes and follows the warehouse") {
    val warehouse = spark.conf.get("spark.sql.warehouse.dir")
    assert(HyperspaceConf.systemPath(spark) == new Path(warehouse, "indexes").toString)
    withConf("spark.hyperspace.system.path" -> "/tmp/my-indexes") {
      assert(HyperspaceConf.systemPath(spark) == "/tmp/my-indexes")
    }
  }

  test("every key keeps the original Hyperspace name and is listed once") {
    assert(HyperspaceConf.allKeys.distinct == HyperspaceConf.allKeys)
    assert(HyperspaceConf.allKeys.forall(_.startsWith("spark.hyperspace.")))
    assert(HyperspaceConf.allKeys.contains("spark.hyperspace.index.numBuckets"))
    assert(HyperspaceConf.allKeys.contains("spark.hyperspace.index.hybridscan.maxAppendedRatio"))
  }

  test("every setting the object defines is listed, and documented in docs/configuration.md") {
    // A setting left out of allEntries is missing from validation, the Python side and the docs.
    val defined = HyperspaceConf.getClass.getMethods.toSeq
      .filter(m => m.getParameterCount == 0 && classOf[ConfigEntry[_]].isAssignableFrom(m.getReturnType))
      .map(_.invoke(HyperspaceConf).asInstanceOf[ConfigEntry[_]].key)
    assert(defined.nonEmpty)
    val unlisted = defined.filterNot(HyperspaceConf.allKeys.contains)
    assert(unlisted.isEmpty, s"defined but not in HyperspaceConf.allEntries: $unlisted")
    assert(defined.size == HyperspaceConf.allKeys.size)
    val docs = Source.fromFile("docs/configuration.md", "UTF-8")
    val documented =
      try docs.getLines().flatMap(line =>
          "^\\| `(spark\\.hyperspace\\.[^`]+)`".r.findFirstMatchIn(line).map(_.group(1))).toSet
      finally docs.close()
    val undocumented = HyperspaceConf.allKeys.filterNot(documented)
    assert(undocumented.isEmpty, s"not in docs/configuration.md's table: $undocumented")
  }

  test("the original's older key names are read while the current key is unset") {
    withConf("spark.hyperspace.index.num.buckets" -> "12") {
      assert(HyperspaceConf.numBuckets(spark) == 12)
      assert(HyperspaceConf.effectiveValue(spark, "spark.hyperspace.index.num.buckets") == "12")
      assert(HyperspaceConf.validate("spark.hyperspace.index.num.buckets", " 8 ") == "8")
      withConf("spark.hyperspace.index.numBuckets" -> "24") {
        assert(HyperspaceConf.numBuckets(spark) == 24, "the current key wins")
      }
    }
    withConf("spark.hyperspace.index.num.buckets" -> "0") {
      assert(intercept[HyperspaceException](HyperspaceConf.numBuckets(spark)).getMessage ==
        "Invalid value '0' for spark.hyperspace.index.num.buckets (an older name of " +
        "spark.hyperspace.index.numBuckets): must be between 1 and 100000.")
    }
    assert(HyperspaceConf.alternativeKeysAsJava.get("spark.hyperspace.index.num.buckets") ==
      "spark.hyperspace.index.numBuckets")
  }

  test("explain highlight tags apply only when both are set") {
    assert(HyperspaceConf.explainHighlightTags(spark).isEmpty)
    withConf("spark.hyperspace.explain.displayMode.highlight.beginTag" -> "[[") {
      assert(HyperspaceConf.explainHighlightTags(spark).isEmpty)
      withConf("spark.hyperspace.explain.displayMode.highlight.endTag" -> "]]") {
        assert(HyperspaceConf.explainHighlightTags(spark).contains(("[[", "]]")))
      }
    }
  }

  test("values are read at every use, never cached") {
    withConf("spark.hyperspace.index.numBuckets" -> "16") {
      assert(HyperspaceConf.numBuckets(spark) == 16)
      spark.conf.set("spark.hyperspace.index.numBuckets", "32")
      assert(HyperspaceConf.numBuckets(spark) == 32)
    }
    assert(HyperspaceConf.numBuckets(spark) == 200)
  }

  test("sizes, booleans and choices are parsed the way Spark writes them") {
    withConf("spark.hyperspace.index.optimize.fileSizeThreshold" -> "64m") {
      assert(HyperspaceConf.optimizeFileSizeThreshold(spark) == 64L * 1024 * 1024)
    }
    withConf("spark.hyperspace.index.lineage.enabled" -> " TRUE ") {
      assert(HyperspaceConf.lineageEnabled(spark))
    }
    withConf("spark.hyperspace.explain.displayMode" -> "HTML") {
      assert(HyperspaceConf.explainDisplayMode(spark) == "html")
    }
  }

  private val badValues = Seq(
    ("spark.hyperspace.index.numBuckets", "many", "expected an integer"),
    ("spark.hyperspace.index.numBuckets", "0", "must be between 1 and 100000"),
    ("spark.hyperspace.index.numBuckets", "-3", "must be between 1 and 100000"),
    ("spark.hyperspace.index.lineage.enabled", "yes", "expected a boolean"),
    ("spark.hyperspace.index.hybridscan.maxAppendedRatio", "1.5", "between 0.0 and 1.0"),
    ("spark.hyperspace.index.hybridscan.maxDeletedRatio", "NaN", "expected a number"),
    ("spark.hyperspace.index.optimize.fileSizeThreshold", "big", "expected a size"),
    ("spark.hyperspace.index.optimize.fileSizeThreshold", "0", "must be a positive size"),
    ("spark.hyperspace.explain.displayMode", "fancy", "expected one of console, html, plaintext"),
    ("spark.hyperspace.system.path", "", "must not be empty"))

  badValues.foreach { case (key, value, expected) =>
    test(s"rejects '$value' for $key with a message naming the key") {
      val entry = HyperspaceConf.entryFor(key).get
      withConf(key -> value) {
        val e = intercept[HyperspaceException](entry.readFrom(spark))
        assert(e.getMessage.startsWith(s"Invalid value '$value' for $key: "), e.getMessage)
        assert(e.getMessage.contains(expected), e.getMessage)
      }
      val e2 = intercept[HyperspaceException](HyperspaceConf.validate(key, value))
      assert(e2.getMessage.contains(key))
    }
  }

  test("validate normalises good values and rejects unknown keys") {
    assert(HyperspaceConf.validate("spark.hyperspace.explain.displayMode", "Console") == "console")
    assert(HyperspaceConf.validate("spark.hyperspace.index.numBuckets", " 8 ") == "8")
    val e = intercept[HyperspaceException](
      HyperspaceConf.validate("spark.hyperspace.index.numBucket", "8"))
    assert(e.getMessage.contains("Unknown Hyperspace setting 'spark.hyperspace.index.numBucket'"))
  }

  test("effectiveValue renders defaults and set values") {
    assert(HyperspaceConf.effectiveValue(spark, "spark.hyperspace.index.numBuckets") == "200")
    withConf("spark.hyperspace.index.hybridscan.enabled" -> "true") {
      assert(HyperspaceConf.effectiveValue(spark, "spark.hyperspace.index.hybridscan.enabled") ==
        "true")
    }
  }
}
