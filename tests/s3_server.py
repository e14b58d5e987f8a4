"""A real S3 server on 127.0.0.1 for the s3a:// tests, in a process of its own on free ports, chosen by
``HYPERSPACE_S3_SERVER`` (docs/object-stores.md):

* ``moto`` (the default; `make test`, CI): moto's server (``moto[s3,server]`` from PyPI, pinned in
  versions.properties, in the test venv), run by tests/s3/moto_server.py. It answers a conditional
  PUT of an existing key with 412, but checks and then writes without a lock, so two writers racing
  for one new key can both be told they stored it: it cannot check that a race has one winner.
* ``seaweedfs`` (`make test-s3`, `make test-full`): SeaweedFS (``weed server -s3``: master, volume
  server, filer and S3 gateway in one process), built once per machine by tests/s3/seaweedfs.sh. It
  evaluates ``If-None-Match`` under a per-key lock, so it also serves the races.

Neither checks credentials, so any keys do. The Scala suites start the same servers the same way
(io.hyperspace.testing.S3Server)."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KINDS = ("moto", "seaweedfs")
RACES_NEED = (
    "a race for one key is checked on SeaweedFS (HYPERSPACE_S3_SERVER=seaweedfs: make test-s3, make "
    "test-full): moto checks If-None-Match and then writes without a lock, so two racing writers can "
    "both win there, whatever Hyperspace does"
)


def server_kind() -> str:
    kind = os.environ.get("HYPERSPACE_S3_SERVER", "moto")
    if kind not in KINDS:
        raise ValueError(f"HYPERSPACE_S3_SERVER={kind!r}: one of {', '.join(KINDS)}")
    return kind


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
    """One server of kind ``server_kind()``; :meth:`stop` ends it and removes its data."""

    ACCESS_KEY, SECRET_KEY = "hyperspace", "hyperspace-test-secret"

    def __init__(self, kind: str | None = None) -> None:
        self.kind = kind or server_kind()
        #: Whether racing conditional writes of one key get exactly one winner (see the module's doc).
        self.serializes_conditional_writes = self.kind == "seaweedfs"
        self.dir = Path(tempfile.mkdtemp(prefix=f"hyperspace-s3-{self.kind}-"))
        self.log = self.dir / "server.log"
        if self.kind == "seaweedfs":
            self.ports = _free_ports(8)
            master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = self.ports
            (self.dir / "data").mkdir()
            args = [
                str(weed_binary()), "server", f"-dir={self.dir / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                f"-master.port={master}", f"-master.port.grpc={master_grpc}", f"-volume.port={volume}",
                f"-volume.port.grpc={volume_grpc}", "-filer", f"-filer.port={filer}",
                f"-filer.port.grpc={filer_grpc}", "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}",
                "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.volumeSizeLimitMB=64", "-volume.max=0",
                "-volume.preStopSeconds=0",
            ]  # fmt: skip
        else:
            self.ports = _free_ports(1)
            s3 = self.ports[0]
            args = [sys.executable, str(REPO / "tests/s3/moto_server.py"), str(s3)]
        self.endpoint = f"http://127.0.0.1:{s3}"
        with open(self.log, "wb") as log:
            # moto's runner ends when its input closes (tests/s3/moto_server.py), SeaweedFS on SIGTERM.
            self.process = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                preexec_fn=_end_with_parent,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                text = self.log.read_text(errors="replace")[-4000:]
                self.stop()
                raise RuntimeError(f"the {self.kind} S3 server exited ({self.process.returncode}):\n{text}")
            try:
                if _status("GET", self.endpoint + "/") == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the {self.kind} S3 server at {self.endpoint} did not answer within 60 s")
            time.sleep(0.1)
        self._client: Any = None

    def client(self) -> Any:
        """A boto3 S3 client of this server: requests signed as S3A signs them (moto refuses anonymous
        object writes)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3", endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=self.ACCESS_KEY,
                aws_secret_access_key=self.SECRET_KEY,
                config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
            )  # fmt: skip
        return self._client

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def put(self, bucket: str, key: str, body: bytes, if_none_match: bool) -> int:
        """One PutObject of ``key`` (with ``If-None-Match: *`` if asked); the HTTP status."""
        from botocore.exceptions import ClientError

        extra = {"IfNoneMatch": "*"} if if_none_match else {}
        try:
            reply = self.client().put_object(Bucket=bucket, Key=key, Body=body, **extra)
        except ClientError as e:
            return int(e.response["ResponseMetadata"]["HTTPStatusCode"])
        return int(reply["ResponseMetadata"]["HTTPStatusCode"])

    def get(self, bucket: str, key: str) -> bytes:
        return bytes(self.client().get_object(Bucket=bucket, Key=key)["Body"].read())

    def hadoop_settings(self) -> dict[str, str]:
        """An S3A client of this server (each key also as ``spark.hadoop.<key>``)."""
        return {
            "fs.s3a.endpoint": self.endpoint,
            "fs.s3a.endpoint.region": "us-east-1",
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "fs.s3a.access.key": self.ACCESS_KEY,
            "fs.s3a.secret.key": self.SECRET_KEY,
            "fs.s3a.retry.limit": "2",
            "fs.s3a.attempts.maximum": "2",
            "fs.s3a.retry.interval": "100ms",
            # A request the loopback server leaves unanswered is retried after 20 s, not S3A's 200 s.
            "fs.s3a.connection.timeout": "20s",
            "fs.s3a.connection.request.timeout": "20s",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            if self.kind == "seaweedfs":
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
