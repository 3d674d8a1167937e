#!/usr/bin/env bash
# Runs every cargo-fuzz target of toolfunc for a fixed time and fails when one
# finds a crash (a panic, a caught panic reported as PANICKED, a hang, or an
# out-of-memory).
#
#   bash fuzz/run.sh                 # every target, SECS (default 20) seconds each
#   SECS=60 bash fuzz/run.sh http    # one target, one minute
#
# Needs rustup with a nightly toolchain (libFuzzer builds use sanitizers); installs
# cargo-fuzz when it is missing. Each target starts from its committed seeds
# (fuzz/seeds/<target>/) copied into a scratch corpus, so the inputs libFuzzer
# generates never land in the tree; a crashing input is written to
# fuzz/artifacts/<target>/ (ignored by git: move it to fuzz/found/ to keep it).
# Environment: SECS (seconds per target), FUZZ_TIMEOUT (seconds one input may
# take, default 10); cargo's own (CARGO_BUILD_JOBS...) apply to the build.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."

secs="${SECS:-20}"
per_input="${FUZZ_TIMEOUT:-10}"
case "$secs$per_input" in
    *[!0-9]*) echo "fuzz: SECS and FUZZ_TIMEOUT must be whole seconds" >&2; exit 2 ;;
esac
export CARGO_TERM_COLOR=never

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
cargo +nightly fuzz --version

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir fuzz)
fi

echo "== fuzz: build (${targets[*]})"
cargo +nightly fuzz build --fuzz-dir fuzz

scratch="$(mktemp -d "${TMPDIR:-/tmp}/toolfunc-fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

failed=()
summary=()
for target in "${targets[@]}"; do
    echo "== fuzz: $target for ${secs}s"
    corpus="$scratch/corpus/$target"
    log="$scratch/$target.log"
    mkdir -p "$corpus" "fuzz/artifacts/$target"
    if [[ -d "fuzz/seeds/$target" ]]; then
        cp -R "fuzz/seeds/$target/." "$corpus/"
    fi
    started=$(date +%s)
    rc=0
    cargo +nightly fuzz run --fuzz-dir fuzz "$target" "$corpus" -- \
        -max_total_time="$secs" \
        -timeout="$per_input" \
        -rss_limit_mb=2048 \
        -dict=fuzz/dict/json.dict \
        -print_final_stats=1 \
        >"$log" 2>&1 || rc=$?
    elapsed=$(( $(date +%s) - started ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    runs=${runs:-$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)}
    entries=$(find "$corpus" -type f | wc -l | tr -d ' ')
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [[ $rc -eq 0 ]]; then
        line="fuzz $target: ok, ${runs:-?} runs in ${elapsed}s, corpus $entries"
    else
        # The crash report: from the panic (or the sanitizer's or libFuzzer's own
        # report) to the end, else the log's tail.
        first=$(grep -n -m 1 -E "panicked at|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)" "$log" | cut -d: -f1 || true)
        tail -n "+${first:-1}" "$log" | tail -n 200
        where=$(sed -n "s/.*panicked at \(.*\):$/\1/p" "$log" | head -n 1)
        line="fuzz $target: FAILED (exit $rc) after ${runs:-?} runs in ${elapsed}s; ${where:+panic at $where; }input: ${artifact:-none written, see the log above}"
        failed+=("$target")
    fi
    echo "$line"
    summary+=("$line")
done

echo "== fuzz: summary"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${secs}s without a crash"
