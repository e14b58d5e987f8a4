package io.hyperspace.testing

import java.io.File
import java.net.{HttpURLConnection, ServerSocket, URI}
import java.nio.file.Files
import java.util.concurrent.TimeUnit

import scala.io.Source

import org.apache.commons.io.FileUtils

/**
 * A real S3 server on 127.0.0.1 for the tests, in a process of its own on free ports, of the kind
 * `HYPERSPACE_S3_SERVER` names ([[S3Server.kind]]; docs/object-stores.md):
 *
 *   - `moto` (the default: `make test`, CI): moto's server (`moto[s3,server]`, pinned in
 *     versions.properties and installed in the test venv by `make setup`), run by
 *     tests/s3/moto_server.py. It answers a conditional PUT of an existing key with 412, but checks
 *     and then writes without a lock: two writers racing for one new key can both be told they
 *     stored it, so it cannot show that a race has exactly one winner.
 *   - `seaweedfs` (`make test-s3`, `make test-full`): SeaweedFS (`weed server -s3`: master, volume
 *     server, filer and S3 gateway in one process, data in a temporary directory), built once per
 *     machine by tests/s3/seaweedfs.sh. It evaluates `If-None-Match` under a per-key lock.
 *
 * Neither checks credentials. [[close]] stops the server and removes its data; a test JVM that dies
 * without closing it takes moto's down too (its runner ends when its input closes).
 */
final class S3Server private (
    val kind: String,
    val port: Int,
    process: Process,
    dir: File,
    val log: File,
    ports: Seq[Int])
  extends AutoCloseable {

  val endpoint: String = s"http://127.0.0.1:$port"

  /** Whether racing conditional writes of one key get exactly one winner (SeaweedFS, not moto). */
  def serializesConditionalWrites: Boolean = S3Server.serializesConditionalWrites(kind)

  /** Creates bucket `name` (an anonymous PUT: both servers take one for a bucket). */
  def createBucket(name: String): Unit = {
    val status = S3Server.request("PUT", s"$endpoint/$name")
    require(status == 200, s"creating bucket $name on $endpoint answered $status")
  }

  /**
   * The Hadoop settings of an S3A client of this server (each key also works as `spark.hadoop.<key>`):
   * path-style requests to the endpoint, static keys, few retries so a failing test fails fast.
   */
  def hadoopSettings: Map[String, String] = Map(
    "fs.s3a.endpoint" -> endpoint,
    "fs.s3a.endpoint.region" -> "us-east-1",
    "fs.s3a.path.style.access" -> "true",
    "fs.s3a.connection.ssl.enabled" -> "false",
    "fs.s3a.aws.credentials.provider" -> "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    "fs.s3a.access.key" -> "hyperspace",
    "fs.s3a.secret.key" -> "hyperspace-test-secret",
    "fs.s3a.retry.limit" -> "2",
    "fs.s3a.attempts.maximum" -> "2",
    "fs.s3a.retry.interval" -> "100ms",
    // A request the loopback server leaves unanswered is retried after 20 s, not S3A's 200 s.
    "fs.s3a.connection.timeout" -> "20s",
    "fs.s3a.connection.request.timeout" -> "20s")

  override def close(): Unit = {
    scala.util.Try(process.getOutputStream.close())
    if (kind == "seaweedfs") process.destroy()
    if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(10, TimeUnit.SECONDS)
    FileUtils.deleteQuietly(dir)
    S3Server.removeSockets(ports)
  }
}

object S3Server {

  val Kinds: Seq[String] = Seq("moto", "seaweedfs")

  /** The server the tests start: `HYPERSPACE_S3_SERVER`, `moto` when unset. */
  lazy val kind: String = {
    val k = sys.env.getOrElse("HYPERSPACE_S3_SERVER", "moto")
    require(Kinds.contains(k), s"HYPERSPACE_S3_SERVER=$k: one of ${Kinds.mkString(", ")}")
    k
  }

  def serializesConditionalWrites(kind: String): Boolean = kind == "seaweedfs"

  /** Why a test of a race is left out on moto (its cancel message). */
  val RacesNeed: String =
    "a race for one key is checked on SeaweedFS (HYPERSPACE_S3_SERVER=seaweedfs: make test-s3, make test-full): " +
      "moto checks If-None-Match and then writes without a lock, so two racing writers can both win there, " +
      "whatever Hyperspace does"

  /** The `weed` binary, built by tests/s3/seaweedfs.sh if this machine has none yet. */
  lazy val weedBinary: File = {
    val script = new File("tests/s3/seaweedfs.sh").getAbsoluteFile
    require(script.isFile, s"$script is missing (tests run from the repository root)")
    val p = new ProcessBuilder("bash", script.getPath).redirectError(ProcessBuilder.Redirect.INHERIT).start()
    val out = Source.fromInputStream(p.getInputStream, "UTF-8").mkString.trim
    require(p.waitFor() == 0, s"$script failed (exit ${p.exitValue()}): $out")
    new File(out.linesIterator.toSeq.last)
  }

  /**
   * The Python with moto: `HYPERSPACE_S3_PYTHON`, else the venv `make setup` made (the default line's
   * `.venv`, else another line's): the server is the same whatever the Spark line under test.
   */
  lazy val motoPython: File = {
    val candidates = sys.env.get("HYPERSPACE_S3_PYTHON").map(new File(_)).toSeq ++
      (new File(".venv") +: Option(new File(".").listFiles()).toSeq.flatten.filter(_.getName.startsWith(".venv-"))
        .sortBy(_.getName)).map(v => new File(v, "bin/python"))
    candidates.find(_.canExecute).map(_.getAbsoluteFile).getOrElse(
      throw new IllegalStateException(
        s"no Python with moto for the S3 tests (tried ${candidates.mkString(", ")}): run make setup, " +
          "or set HYPERSPACE_S3_PYTHON"))
  }

  /** Starts a server of [[kind]] and waits (up to 60 s) until it answers. */
  def start(): S3Server = {
    val dir = Files.createTempDirectory(s"hyperspace-s3-$kind").toFile
    val log = new File(dir, "server.log")
    val (ports, s3, command) = kind match {
      case "seaweedfs" =>
        val ports = freePorts(8)
        val Seq(master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc) = ports
        val data = new File(dir, "data")
        data.mkdirs()
        (ports, s3,
          Seq(weedBinary.getPath, "server", s"-dir=${data.getPath}", "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1", s"-master.port=$master", s"-master.port.grpc=$masterGrpc", s"-volume.port=$volume",
            s"-volume.port.grpc=$volumeGrpc", "-filer", s"-filer.port=$filer", s"-filer.port.grpc=$filerGrpc", "-s3",
            s"-s3.port=$s3", s"-s3.port.grpc=$s3Grpc", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64", "-volume.max=0", "-volume.preStopSeconds=0"))
      case _ =>
        val ports = freePorts(1)
        val runner = new File("tests/s3/moto_server.py").getAbsoluteFile
        require(runner.isFile, s"$runner is missing (tests run from the repository root)")
        (ports, ports.head, Seq(motoPython.getPath, runner.getPath, ports.head.toString))
    }
    // The server's input stays a pipe from this JVM: moto's runner ends when it closes.
    val process = new ProcessBuilder(command: _*).directory(dir).redirectErrorStream(true).redirectOutput(log).start()
    val server = new S3Server(kind, s3, process, dir, log, ports)
    // A suite that aborts skips its afterAll: the server still ends with the test JVM.
    Runtime.getRuntime.addShutdownHook(new Thread(() => server.close()))
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    var ready = false
    while (!ready) {
      if (!process.isAlive) {
        val text = FileUtils.readFileToString(log, "UTF-8")
        FileUtils.deleteQuietly(dir)
        throw new IllegalStateException(
          s"the $kind S3 server exited (${process.exitValue()}):\n${text.takeRight(4000)}")
      }
      if (System.nanoTime() > deadline) {
        server.close()
        throw new IllegalStateException(s"the $kind S3 server on port $s3 did not answer within 60 s")
      }
      ready = scala.util.Try(request("GET", server.endpoint + "/")).toOption.contains(200)
      if (!ready) Thread.sleep(100)
    }
    server
  }

  /** The HTTP status of an anonymous request without a body. */
  private def request(method: String, url: String): Int = {
    val c = new URI(url).toURL.openConnection().asInstanceOf[HttpURLConnection]
    c.setRequestMethod(method)
    c.setConnectTimeout(2000)
    c.setReadTimeout(10000)
    try c.getResponseCode
    finally c.disconnect()
  }

  /** The Unix sockets SeaweedFS leaves in /tmp beside its gRPC ports (`seaweedfs-<role>-grpc-<port>.sock`, ...). */
  private def removeSockets(ports: Seq[Int]): Unit = {
    val mine = ports.map(p => s"-$p.sock").toSet
    Option(new File("/tmp").listFiles()).toSeq.flatten
      .filter(f => f.getName.startsWith("seaweedfs-") && mine.exists(f.getName.endsWith))
      .foreach(f => FileUtils.deleteQuietly(f))
  }

  /** `n` distinct ports free on 127.0.0.1 now, below 55536 (SeaweedFS adds 10000 to some). */
  private def freePorts(n: Int): Seq[Int] = {
    val sockets = Iterator.continually(new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress))
      .filter { s =>
        val ok = s.getLocalPort < 55536; if (!ok) s.close(); ok
      }
      .take(n).toList
    try sockets.map(_.getLocalPort)
    finally sockets.foreach(_.close())
  }
}
