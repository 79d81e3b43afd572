#!/usr/bin/env bash
# Runs the interop tests and prints their results as the table of
# interop/README.md: one row per scenario, one column per peer and transport.
#
#   bash interop/table.sh            # the whole suite
#   bash interop/table.sh rmcp::     # a filter, as for cargo test
#
# The cargo output goes to stderr; the table to stdout. The exit status is
# cargo's.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test -p mcp-tasks-interop --test interop -- "$@" 2>&1 | tee "$log" >&2
status=${PIPESTATUS[0]}

grep -E '^test [a-z0-9_]+::[a-z0-9_]+::[a-z0-9_]+ \.\.\. ' "$log" | sort | awk '
    BEGIN {
        npeers = split("rmcp ts legacy neva everything", peer_order, " ")
        name["rmcp"] = "rmcp 3.11"; name["ts"] = "TypeScript SDK 2"; name["legacy"] = "TypeScript SDK 1.32 (2025-11-25 tasks)"; name["neva"] = "neva 0.9 (negative peer)"; name["everything"] = "server-everything 2026.8.31 (initialize era)"
        ntransports = split("stdio http http_sse http_json", transport_order, " ")
        label["stdio"] = "stdio"; label["http"] = "HTTP"; label["http_sse"] = "HTTP (SSE replies)"; label["http_json"] = "HTTP (JSON replies)"
    }
    {
        split($2, part, "::")
        p = part[1]; t = part[2]; s = part[3]
        has_transport[p, t] = 1
        if (!((p, s) in has_row)) { has_row[p, s] = 1; rows[p, ++nrows[p]] = s }
        result[p, t, s] = ($4 == "ok") ? "pass" : ($4 ~ /^ignored/ ? "ignored" : "**FAIL**")
    }
    END {
        first = 1
        for (i = 1; i <= npeers; i++) {
            p = peer_order[i]
            if (!(p in nrows)) continue
            if (!first) print ""
            first = 0
            header = "| " name[p] " |"; rule = "|---|"
            n = 0
            for (j = 1; j <= ntransports; j++) {
                t = transport_order[j]
                if ((p, t) in has_transport) { cols[++n] = t; header = header " " label[t] " |"; rule = rule "---|" }
            }
            print header; print rule
            for (r = 1; r <= nrows[p]; r++) {
                s = rows[p, r]
                line = "| `" s "` |"
                for (c = 1; c <= n; c++) {
                    cell = ((p, cols[c], s) in result) ? result[p, cols[c], s] : "—"
                    line = line " " cell " |"
                }
                print line
            }
        }
    }'
exit "$status"
