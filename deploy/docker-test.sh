#!/usr/bin/env bash
# `make docker-test`: the image as an operator gets it, built and run for real.
#   1. builds toolcall-guard:<version> from the Dockerfile on deploy/base-image.sh's base;
#   2. checks it holds runtime dependencies only and runs as uid 10001;
#   3. runs a strict OpenAI emulator (the same image, `toolcall-guard emulate`) and the proxy in
#      front of it on a private network, the repair log on a fresh volume at /data, a provider
#      key injected and client keys required (no open relay), and waits for HEALTHCHECK: healthy;
#   4. sends a broken history through it: 200, repaired, with a record id;
#   5. replaces the container (stop, remove, run again on the same volume), waits for healthy
#      again and reads the record back from /data through /repairs/<id>;
#   6. validates docker-compose.yml with `docker compose config` (or Debian's docker-compose).
# Everything it starts is removed on exit, pass or fail; any failure exits non-zero, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml)
IMAGE=${IMAGE:-toolcall-guard:$VERSION}
RUN_ID=tcg-test-$$
NETWORK=$RUN_ID-net
VOLUME=$RUN_ID-data
EMULATOR=$RUN_ID-emulator
PROXY=$RUN_ID-proxy
ADMIN_TOKEN=admin-$RUN_ID
CLIENT_KEY=client-$RUN_ID
HEALTHY_TIMEOUT=${HEALTHY_TIMEOUT:-60}
STARTED=$(date +%s)

step() { echo "docker-test [$(($(date +%s) - STARTED))s]: $*"; }
fail() {
  echo "docker-test: FAILED: $*" >&2
  for container in "$PROXY" "$EMULATOR"; do
    if docker container inspect "$container" >/dev/null 2>&1; then
      echo "--- logs of $container" >&2
      docker logs --tail 40 "$container" >&2 || true
    fi
  done
  exit 1
}
cleanup() {
  docker rm --force --volumes "$PROXY" "$EMULATOR" >/dev/null 2>&1 || true
  docker volume rm --force "$VOLUME" >/dev/null 2>&1 || true
  docker network rm "$NETWORK" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'fail "line $LINENO: $BASH_COMMAND"' ERR

docker info >/dev/null 2>&1 || fail "no Docker engine answers (start dockerd; .ci/run does)"

# 1. The image.
BASE=$(deploy/base-image.sh)
step "building $IMAGE on $BASE"
BUILD_LOG=$(mktemp)
# The build stage is tagged too: it is the cache of the dependency layer, so pruning the
# images earlier builds left untagged (below) never drops it.
for target in "--target build --tag toolcall-guard-build:cache" "--tag $IMAGE"; do
  # shellcheck disable=SC2086 # two words each: the option and its value
  docker build --build-arg "BASE_IMAGE=$BASE" $target . >"$BUILD_LOG" 2>&1 \
    || { cat "$BUILD_LOG" >&2; rm -f "$BUILD_LOG"; fail "the image does not build"; }
done
rm -f "$BUILD_LOG"
docker image prune --force --filter label=org.opencontainers.image.title=toolcall-guard >/dev/null

# 2. Runtime dependencies only, not root.
step "checking what the image holds"
docker run --rm --entrypoint python "$IMAGE" -c '
import importlib.util, os, sys
dev = [m for m in ("pytest", "mypy", "ruff", "hypothesis", "litellm", "playwright", "openai", "pip")
       if importlib.util.find_spec(m)]
assert not dev, f"not runtime dependencies: {dev}"
assert os.getuid() == 10001, os.getuid()
import proxy.app, psycopg, uvloop  # the proxy, its PostgreSQL driver, its event loop
' || fail "the image holds more than the runtime, or runs as root"

# 3. The emulator and the proxy in front of it.
docker network create "$NETWORK" >/dev/null
docker volume create "$VOLUME" >/dev/null
# The emulator gets a health check of its own (as in docker-compose.yml): the history is sent
# only once both answer.
docker run --detach --name "$EMULATOR" --network "$NETWORK" --network-alias emulator \
  --health-interval 1s --health-retries 30 --health-cmd \
  "python -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:8790/v1/models', timeout=2)\"" \
  "$IMAGE" emulate --provider openai --host 0.0.0.0 --port 8790 >/dev/null

run_proxy() {
  # --health-interval: the image's own check, run every 2 s instead of 15 s so the test is fast.
  docker run --detach --name "$PROXY" --network "$NETWORK" \
    --publish 127.0.0.1::8780 --volume "$VOLUME:/data" --health-interval 2s \
    --env TOOLCALL_GUARD_UPSTREAMS__OPENAI__BASE_URL=http://emulator:8790/v1 \
    --env OPENAI_API_KEY=sk-emulated \
    --env "TOOLCALL_GUARD_CLIENT_KEYS=$CLIENT_KEY" \
    --env "TOOLCALL_GUARD_ADMIN_TOKEN=$ADMIN_TOKEN" \
    "$IMAGE" >/dev/null
}

wait_healthy() {  # CONTAINER
  local deadline=$(($(date +%s) + HEALTHY_TIMEOUT)) status=""
  while [ "$(date +%s)" -lt "$deadline" ]; do
    status=$(docker inspect --format '{{.State.Health.Status}}' "$1")
    [ "$status" = healthy ] && return 0
    [ "$(docker inspect --format '{{.State.Running}}' "$1")" = true ] || break
    sleep 1
  done
  fail "$1 is not healthy after ${HEALTHY_TIMEOUT}s (last status: ${status:-none})"
}

run_proxy
step "waiting for the HEALTHCHECK"
wait_healthy "$PROXY"
wait_healthy "$EMULATOR"
PORT=$(docker port "$PROXY" 8780/tcp | head -n1 | sed 's/.*://')
BASE_URL=http://127.0.0.1:$PORT

# The start-up line says where things are.
docker logs "$PROXY" 2>&1 | grep -q '/app/config/toolcall-guard.toml' \
  || fail "the start-up line does not name the config file read"

# 4. A broken history: the assistant message with the tool call was lost.
step "sending a broken history"
HISTORY='{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"},
  {"role": "tool", "tool_call_id": "call_1", "content": "18 C"},
  {"role": "user", "content": "Umbrella?"}]}'
HEADERS=$(mktemp)
trap 'rm -f "$HEADERS"; cleanup' EXIT
status=$(curl --silent --show-error --max-time 20 --output /dev/null --dump-header "$HEADERS" \
  --write-out '%{http_code}' "$BASE_URL/v1/chat/completions" \
  -H 'content-type: application/json' -H "authorization: Bearer $CLIENT_KEY" -d "$HISTORY")
[ "$status" = 200 ] || fail "the broken history got HTTP $status, not 200: $(cat "$HEADERS")"
grep -qi '^x-toolcall-guard-outcome: repaired' "$HEADERS" || fail "no 'repaired' outcome"
RECORD=$(sed -n 's/^x-toolcall-guard-record: *\([^[:space:]]*\).*/\1/Ip' "$HEADERS")
[ -n "$RECORD" ] || fail "no record id in the answer"
status=$(curl --silent --output /dev/null --write-out '%{http_code}' --max-time 20 \
  "$BASE_URL/v1/chat/completions" -H 'content-type: application/json' -d "$HISTORY")
[ "$status" = 401 ] || fail "a request without a client key got HTTP $status, not 401"

# 5. A new container on the same volume: the record is still there.
step "replacing the container; reading record $RECORD back from /data"
docker stop --time 10 "$PROXY" >/dev/null
docker rm "$PROXY" >/dev/null
run_proxy
wait_healthy "$PROXY"
PORT=$(docker port "$PROXY" 8780/tcp | head -n1 | sed 's/.*://')
BASE_URL=http://127.0.0.1:$PORT
curl --silent --show-error --fail --max-time 20 "$BASE_URL/repairs/$RECORD" \
  -H "authorization: Bearer $ADMIN_TOKEN" | python3 -c '
import json, sys
record = json.load(sys.stdin)
assert record["outcome"] == "repaired", record["outcome"]
assert any(f["rule"] == "orphan_tool_result" for f in record["findings"]), record["findings"]
' || fail "record $RECORD did not come back from the /data volume as repaired"

# 6. The Compose file (the compose plugin, or Debian's docker-compose).
step "validating docker-compose.yml"
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  command -v docker-compose >/dev/null || fail "neither 'docker compose' nor docker-compose"
  compose=(docker-compose)
fi
"${compose[@]}" --file docker-compose.yml --profile postgres config --quiet \
  || fail "docker-compose.yml does not validate"

step "passed"
