#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 30) each, one process at a time,
# on a corpus seeded from the shipped data; stops at the first finding (the
# crashing input is left in fuzz/artifacts/<target>/). Needs the nightly
# toolchain; installs cargo-fuzz when missing.
#   [FUZZ_MAX_LEN=BYTES] fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(sizer split outline late expand)
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: no nightly toolchain (rustup toolchain install nightly): fuzzing skipped" >&2
    exit 0
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
cargo +nightly fuzz build -s none
python3 seed.py corpus
mkdir -p logs
for target in "${targets[@]}"; do
    echo "== fuzz $target: ${seconds}s"
    status=0
    cargo +nightly fuzz run -s none "$target" corpus/"$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 -max_len="${FUZZ_MAX_LEN:-520}" >logs/"$target".log 2>&1 || status=$?
    grep -E "^#[0-9]+ +DONE|^Done|stat::number_of_executed_units|stat::peak_rss|panicked|ERROR|SUMMARY" logs/"$target".log || true
    if [ "$status" -ne 0 ]; then
        grep -A12 panicked logs/"$target".log | head -30 >&2 || true
        echo "fuzz/run.sh: $target found a failing input (fuzz/artifacts/$target/)" >&2
        exit 1
    fi
done
