"""Runs moto's S3 server (``moto[s3,server]``, pinned in versions.properties) on 127.0.0.1:PORT until
this process's standard input closes, then stops it: the S3 server of the s3a:// tests in `make test`
(HYPERSPACE_S3_SERVER=moto; tests/s3_server.py and io.hyperspace.testing.S3Server start it).

Ending on end of input rather than on a signal ties the server's life to its starter's, however that
ends: the starter holds the only write end of the pipe, and the kernel closes it when the starter
exits, killed with SIGKILL included, so no server is ever left behind a test run."""

from __future__ import annotations

import sys

from moto.server import ThreadedMotoServer


def main() -> None:
    port = int(sys.argv[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        sys.stdin.buffer.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
