#!/usr/bin/env bash
# Lists the crate's public API (every public feature but `fuzzing`, which
# is hidden) and compares it with api/public.txt; `--write` updates it.
# The listing comes from rustdoc's JSON, whose format follows the
# toolchain: a new toolchain may change lines without an API change.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}/api"
RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$target" cargo rustdoc --quiet --lib \
    --features stdio,http,oauth,sqlite,postgres,inbox,metrics,test-util \
    -- -Z unstable-options --output-format json
listing="$target/public.txt"
python3 scripts/public_api.py "$target/doc/mcp_tasks.json" >"$listing"
if [[ "${1:-}" == "--write" ]]; then
    mkdir -p api
    cp "$listing" api/public.txt
    echo "api/public.txt updated"
elif ! diff -u api/public.txt "$listing"; then
    echo "the public API changed (above); if that is meant, run scripts/public_api.sh --write" >&2
    exit 1
fi
