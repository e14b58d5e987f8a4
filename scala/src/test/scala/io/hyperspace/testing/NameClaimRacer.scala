package io.hyperspace.testing

import java.io.File
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import io.hyperspace.log.NameClaims

/**
 * A separate JVM claiming index names: `NameClaimRacer <systemPath> <rounds> <who> <startFile>`.
 * Waits for `startFile`, then claims `NAME<r>` (who = "Upper") or `name<r>` (otherwise) for every
 * round, and writes the spelling that owns each round's name, one per line, to `got-by-<who>`.
 */
object NameClaimRacer {
  def main(args: Array[String]): Unit = {
    val Array(dir, rounds, who, startFile) = args
    val conf = new Configuration()
    while (!new File(startFile).exists()) Thread.sleep(1)
    val got = (0 until rounds.toInt).map { r =>
      val name = if (who == "Upper") s"NAME$r" else s"name$r"
      NameClaims.claim(new Path(dir), name, conf)
    }
    Files.write(Paths.get(s"$dir/got-by-$who"), got.mkString("\n").getBytes)
  }
}
