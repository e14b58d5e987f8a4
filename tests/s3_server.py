"""A real S3 server on 127.0.0.1 for the s3a:// tests: SeaweedFS (``weed server -s3``: master, volume
server, filer and S3 gateway in one process), built once per machine by tests/s3/seaweedfs.sh and
started on free ports. It honours ``If-None-Match: *`` on PUT (412 for an existing key), which the
index log's put-if-absent on s3a:// relies on. The Scala suites start it the same way
(io.hyperspace.testing.S3Server)."""

from __future__ import annotations

import ctypes
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def weed_binary() -> Path:
    """The ``weed`` binary, built by tests/s3/seaweedfs.sh if this machine has none yet."""
    out = subprocess.run(
        ["bash", str(REPO / "tests/s3/seaweedfs.sh")], check=True, capture_output=True, text=True
    ).stdout
    return Path(out.strip().splitlines()[-1])


def _end_with_parent() -> None:
    """In the server's process before it starts: SIGTERM when the test process ends, however it ends."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_ports(n: int) -> list[int]:
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            if s.getsockname()[1] < 55536:  # SeaweedFS adds 10000 to some ports
                sockets.append(s)
            else:
                s.close()
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _status(method: str, url: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


class S3Server:
    """One server; :meth:`stop` ends it and removes its data."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hyperspace-s3-"))
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = _free_ports(8)
        self.endpoint = f"http://127.0.0.1:{s3}"
        (self.dir / "data").mkdir()
        self.log = self.dir / "weed.log"
        args = [
            str(weed_binary()), "server", f"-dir={self.dir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={master}", f"-master.port.grpc={master_grpc}", f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}", "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
            "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64", "-volume.max=0", "-volume.preStopSeconds=0",
        ]  # fmt: skip
        self.ports = [master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                text = self.log.read_text(errors="replace")[-4000:]
                self.stop()
                raise RuntimeError(f"the S3 server exited ({self.process.returncode}):\n{text}")
            try:
                if _status("GET", self.endpoint + "/") == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the S3 server at {self.endpoint} did not answer within 60 s")
            time.sleep(0.1)

    def create_bucket(self, name: str) -> None:
        """An anonymous PUT (the server has no identities, so it takes any credentials)."""
        status = _status("PUT", f"{self.endpoint}/{name}")
        if status != 200:
            raise RuntimeError(f"creating bucket {name} on {self.endpoint} answered {status}")

    def put(self, key: str, body: bytes, if_none_match: bool) -> int:
        """A raw anonymous PUT of ``bucket/key``; the HTTP status."""
        request = urllib.request.Request(f"{self.endpoint}/{key}", data=body, method="PUT")
        if if_none_match:
            request.add_header("If-None-Match", "*")
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)

    def hadoop_settings(self) -> dict[str, str]:
        """An S3A client of this server (each key also as ``spark.hadoop.<key>``)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": "us-east-1",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.access.key": "hyperspace",
            "fs.s3a.secret.key": "hyperspace-test-secret",
            "fs.s3a.retry.limit": "2",
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.interval": "100ms",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
        # SeaweedFS leaves Unix sockets named by its ports in /tmp (seaweedfs-<role>-grpc-<port>.sock, ...).
        for sock in Path("/tmp").glob("seaweedfs-*.sock"):
            if any(sock.name.endswith(f"-{p}.sock") for p in self.ports):
                sock.unlink(missing_ok=True)
