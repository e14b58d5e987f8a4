package io.hyperspace.testing

import java.io.File
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.hyperspace.log.LogStore

/**
 * A separate JVM racing for log entries: `LogStoreRacer <dir> <rounds> <name> <startFile> [<results>]`.
 * Waits for `startFile`, then tries to put entry `r` of `<dir>/round-r` for every round, and
 * writes the rounds it won, one per line, to `<results>/won-by-<name>` (a local directory;
 * `<dir>` when not given). `<dir>` may be any store's path (s3a:// with the S3A settings in a
 * core-site.xml on the class path).
 */
object LogStoreRacer {
  def main(args: Array[String]): Unit = {
    val Array(dir, rounds, name, startFile) = args.take(4)
    val results = args.lift(4).getOrElse(dir)
    val store = LogStore.forPath(new Path(dir), new Configuration())
    while (!new File(startFile).exists()) Thread.sleep(1)
    val won = (0 until rounds.toInt).filter { r =>
      store.putIfAbsent(new Path(s"$dir/round-$r/0"), s"$name round $r")
    }
    Files.write(Paths.get(s"$results/won-by-$name"), won.mkString("\n").getBytes)
  }
}
