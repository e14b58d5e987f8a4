package io.hyperspace.testing

import java.io.{BufferedInputStream, ByteArrayOutputStream, InputStream, OutputStream}
import java.net.{InetAddress, ServerSocket, Socket}
import java.nio.charset.StandardCharsets.ISO_8859_1
import java.util.Locale

import scala.util.control.NonFatal

/**
 * An HTTP/1.1 relay on 127.0.0.1 in front of `upstreamPort` that drops one request header
 * (`If-None-Match` by default) and passes everything else through byte for byte: a store that
 * ignores conditional writes, made from a real one, as a gateway or an older S3-compatible store
 * would be. Request bodies are framed by Content-Length (what the AWS SDK sends); responses are
 * relayed as a byte stream.
 */
final class HeaderDroppingProxy(upstreamPort: Int, dropped: String = "if-none-match") extends AutoCloseable {
  private val server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress)
  val port: Int = server.getLocalPort
  @volatile private var open = true

  daemon("proxy-accept") {
    while (open) {
      try {
        val client = server.accept()
        val upstream = new Socket(InetAddress.getLoopbackAddress, upstreamPort)
        daemon("proxy-responses")(pipe(upstream.getInputStream, client.getOutputStream, client, upstream))
        daemon("proxy-requests")(relayRequests(client, upstream))
      } catch { case NonFatal(_) => () }
    }
  }

  private def daemon(name: String)(body: => Unit): Thread = {
    val t = new Thread(() => body, name)
    t.setDaemon(true)
    t.start()
    t
  }

  private def pipe(in: InputStream, out: OutputStream, sockets: Socket*): Unit =
    try in.transferTo(out)
    catch { case NonFatal(_) => () }
    finally sockets.foreach(s => scala.util.Try(s.close()))

  /** Request after request: the head without the dropped header, then Content-Length bytes of body. */
  private def relayRequests(client: Socket, upstream: Socket): Unit = {
    val in = new BufferedInputStream(client.getInputStream)
    val out = upstream.getOutputStream
    try {
      var lines = readHead(in)
      while (lines.nonEmpty) {
        val kept = lines.filterNot(_.toLowerCase(Locale.ROOT).startsWith(dropped + ":"))
        out.write((kept.mkString("\r\n") + "\r\n\r\n").getBytes(ISO_8859_1))
        out.flush()
        val length = kept.collectFirst {
          case l if l.toLowerCase(Locale.ROOT).startsWith("content-length:") => l.drop(15).trim.toLong
        }.getOrElse(0L)
        copy(in, out, length)
        out.flush()
        lines = readHead(in)
      }
    } catch { case NonFatal(_) => () }
    finally { scala.util.Try(client.close()); scala.util.Try(upstream.close()) }
  }

  /** The request line and headers up to the blank line; empty at the end of the stream. */
  private def readHead(in: InputStream): Seq[String] = {
    val lines = Seq.newBuilder[String]
    var line = readLine(in)
    while (line.exists(_.nonEmpty)) {
      lines += line.get
      line = readLine(in)
    }
    lines.result()
  }

  private def readLine(in: InputStream): Option[String] = {
    val buf = new ByteArrayOutputStream()
    var b = in.read()
    if (b < 0) return None
    while (b >= 0 && b != '\n') {
      if (b != '\r') buf.write(b)
      b = in.read()
    }
    Some(new String(buf.toByteArray, ISO_8859_1))
  }

  private def copy(in: InputStream, out: OutputStream, n: Long): Unit = {
    val buf = new Array[Byte](64 * 1024)
    var left = n
    while (left > 0) {
      val r = in.read(buf, 0, math.min(buf.length.toLong, left).toInt)
      if (r < 0) throw new java.io.EOFException("request body cut short")
      out.write(buf, 0, r)
      left -= r
    }
  }

  override def close(): Unit = {
    open = false
    server.close()
  }
}
