#!/usr/bin/env bash
# Installs what the tests and the demo need beyond the Rust toolchain.
# SQLite is compiled in (rusqlite "bundled"), so no headers are needed. git
# is needed by the workflow fixtures; bubblewrap by the bwrap collector
# runtime and its tests; podman (with runc, for hosts where crun cannot
# run) and a static busybox by the oci runtime's tests, which build a local
# image without any registry; sudo, setpriv and useradd by the multi-user
# privilege-separated deployment test (tests/cli/privsep.rs, run as root)
# and by that deployment itself (docs/security.md); jq by its walkthrough
# (scripts/deploy-demo.sh, tests/cli/deploy.rs); chromium by the
# dashboard's browser test (tests/cli/dashboard.rs); faketime by the S3
# tests (a clock skewed past SigV4's window, tests/cli/blob_clock.rs).
# Idempotent; quiet when
# all is present.
set -euo pipefail
need=()
command -v git >/dev/null || need+=(git)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v unshare >/dev/null || need+=(util-linux)
command -v setpriv >/dev/null || need+=(util-linux)
command -v useradd >/dev/null || [ -x /usr/sbin/useradd ] || need+=(passwd)
command -v sudo >/dev/null || need+=(sudo)
command -v jq >/dev/null || need+=(jq)
command -v faketime >/dev/null || need+=(faketime)
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: please install: ${need[*]}" >&2
    exit 69
  fi
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
