#!/usr/bin/env bash
# Prints the path of SeaweedFS's `weed`, the S3 server the s3a:// tests start on 127.0.0.1
# (io.hyperspace.testing.S3Server, tests/s3_server.py), building it first if this machine has none:
# `go install` of the module pinned in tests/s3/seaweedfs/go.mod (and go.sum), with the machine's Go,
# from the Go module proxy. The binary is kept in the build cache (~/.cache/hyperspace-build) for
# later runs; the module and build caches of the build are removed afterwards (about 2 GB).
# A lock keeps test JVMs and pytest workers starting at once from building it twice.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$(sed -n 's/^seaweedfs=//p' "$root/versions.properties")
if ! grep -q "github.com/seaweedfs/seaweedfs $version" "$here/seaweedfs/go.mod"; then
  echo "tests/s3/seaweedfs/go.mod does not require seaweedfs $version (versions.properties)" >&2
  exit 1
fi
cache=${HS_CACHE:-$HOME/.cache/hyperspace-build}/seaweedfs
bin=$cache/$version/weed
if [ ! -x "$bin" ]; then
  command -v go >/dev/null || { echo "building SeaweedFS for the S3 tests needs Go (go on the PATH)" >&2; exit 1; }
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    tmp=$(mktemp -d "$cache/build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    echo "building SeaweedFS $version for the S3 tests (once per machine) ..." >&2
    start=$(date +%s)
    (cd "$here/seaweedfs" && GOTOOLCHAIN=local GOFLAGS="-mod=readonly -modcacherw" GOMODCACHE="$tmp/mod" \
      GOCACHE="$tmp/cache" GOBIN="$tmp/bin" go install -trimpath -ldflags="-s -w" tool) >&2
    mkdir -p "$cache/$version"
    mv "$tmp/bin/weed" "$bin.part"
    mv "$bin.part" "$bin"
    echo "built $bin in $(($(date +%s) - start)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  fi
fi
echo "$bin"
