#!/usr/bin/env bash
# Prints the base image the Dockerfile should build on (its BASE_IMAGE argument), making sure
# it exists locally:
#   1. $BASE_IMAGE when set (pulled when not present);
#   2. the official python:3.11-slim when present, or when the registry answers a pull;
#   3. otherwise toolcall-guard-base:bookworm, the same Debian release's python3 (3.11) built
#      here from Debian's packages with debootstrap, kept as a local image and reused.
# Progress goes to stderr; stdout is only the image reference.
set -euo pipefail

OFFICIAL=python:3.11-slim
LOCAL=toolcall-guard-base:bookworm
PULL_TIMEOUT=${PULL_TIMEOUT:-60}

have() { docker image inspect "$1" >/dev/null 2>&1; }
say() { echo "base-image: $*" >&2; }

# The Debian mirror apt uses here (deb822 URIs: lines or one-line `deb URL bookworm …`).
debian_mirror() {
  local mirror
  mirror=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$mirror" ]; then
    mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
  fi
  echo "${mirror:-http://deb.debian.org/debian}"
}

build_local_base() {
  command -v debootstrap >/dev/null || { say "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }
  local root mirror
  root=$(mktemp -d /tmp/toolcall-guard-base.XXXXXX)
  trap "rm -rf '$root'" EXIT
  mirror=$(debian_mirror)
  say "building $LOCAL from $mirror with debootstrap (once; ~1 min)"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root" "$mirror" >&2
  # The certificate authorities this machine adds to Debian's (a TLS-inspecting egress, a
  # company CA): the image is built here, for here, and pip in the build must trust them too.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >&2
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' - "$LOCAL" >&2
}

if [ -n "${BASE_IMAGE:-}" ]; then
  have "$BASE_IMAGE" || docker pull "$BASE_IMAGE" >&2
  echo "$BASE_IMAGE"
elif have "$OFFICIAL"; then
  echo "$OFFICIAL"
elif have "$LOCAL"; then
  echo "$LOCAL"
elif timeout "$PULL_TIMEOUT" docker pull "$OFFICIAL" >&2; then
  echo "$OFFICIAL"
else
  say "$OFFICIAL cannot be pulled: building the base from Debian's packages instead"
  build_local_base
  echo "$LOCAL"
fi
