#!/usr/bin/env bash
# Creates the Secrets an example needs, before its first `kubectl apply`: pods read their
# environment when they start, and PostgreSQL sets its password when it first initialises its
# volume, so the values must exist first. Nothing here is a placeholder: tokens and passwords
# are generated, provider keys come from your environment.
#   OPENAI_API_KEY=sk-… deploy/kubernetes/create-secrets.sh sidecar    # or: replicas
# An existing Secret is left alone (PostgreSQL keeps the password it was initialised with); to
# change a value, `kubectl edit secret NAME`, then `kubectl rollout restart deployment/NAME` so
# the pods read it. The generated client key and admin token are printed once, for your agents
# and for the viewer. KUBECTL (default kubectl) may name another client or add --namespace.
set -euo pipefail

example=${1:-}
KUBECTL=${KUBECTL:-kubectl}
PROVIDER_KEYS=(OPENAI_API_KEY DEEPSEEK_API_KEY GEMINI_API_KEY MOONSHOT_API_KEY MISTRAL_API_KEY
  GROQ_API_KEY XAI_API_KEY DASHSCOPE_API_KEY)

random_token() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }

# Provider keys set in this shell, as --from-literal arguments (an unset one is left out: that
# upstream then passes the client's own key through).
provider_literals() {
  local name
  for name in "${PROVIDER_KEYS[@]}"; do
    if [ -n "${!name:-}" ]; then
      echo "--from-literal=$name=${!name}"
    fi
  done
}

create() {  # NAME LITERAL…
  local name=$1
  shift
  if $KUBECTL get secret "$name" >/dev/null 2>&1; then
    echo "secret/$name exists: left as it is" >&2
    return 1
  fi
  $KUBECTL create secret generic "$name" "$@" >&2
}

case "$example" in
  sidecar)
    client_key=$(random_token)
    admin_token=$(random_token)
    mapfile -t keys < <(provider_literals)
    if create toolcall-guard-keys "${keys[@]}" \
      "--from-literal=TOOLCALL_GUARD_CLIENT_KEYS=$client_key" \
      "--from-literal=TOOLCALL_GUARD_ADMIN_TOKEN=$admin_token"; then
      echo "admin token (viewer, /repairs): $admin_token"
    fi
    ;;
  replicas)
    password=$(random_token)
    if ! create toolcall-guard-postgres \
      --from-literal=POSTGRES_USER=toolcall_guard \
      "--from-literal=POSTGRES_PASSWORD=$password" \
      --from-literal=POSTGRES_DB=toolcall_guard; then
      # PostgreSQL keeps the password it was first given: the log's URL must use that one.
      password=$($KUBECTL get secret toolcall-guard-postgres \
        -o 'jsonpath={.data.POSTGRES_PASSWORD}' | base64 -d)
    fi
    client_key=$(random_token)
    admin_token=$(random_token)
    url="postgresql://toolcall_guard:$password@toolcall-guard-postgres:5432/toolcall_guard"
    mapfile -t keys < <(provider_literals)
    if create toolcall-guard-shared "${keys[@]}" \
      "--from-literal=TOOLCALL_GUARD_CLIENT_KEYS=$client_key" \
      "--from-literal=TOOLCALL_GUARD_ADMIN_TOKEN=$admin_token" \
      "--from-literal=TOOLCALL_GUARD_REPAIR_LOG__URL=$url"; then
      echo "client key (agents send it as their API key): $client_key"
      echo "admin token (viewer, /repairs): $admin_token"
    fi
    ;;
  *)
    echo "usage: $0 sidecar|replicas" >&2
    exit 2
    ;;
esac
