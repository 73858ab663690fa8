#!/usr/bin/env bash
# Fetches the real documents of the document benchmarks (benches/documents_bench.py,
# benches/documents_eval.py) from Debian's documentation packages: downloads each package
# (apt-get download, the versions below), extracts it, copies the files listed in
# files.tsv beside this script to DEST/<package>/<path without /usr/share/> with the
# package's copyright file (DEST/<package>/copyright: every file keeps its licence), and
# checks each file's SHA-256.
#
#   bash benches/documents/fetch.sh [DEST]     # DEST: benches/documents/data (git-ignored)
#
# Needs apt-get (run `apt-get update` first) and dpkg-deb. A package whose pinned version
# has left the archive is fetched at its current version; a file that then differs fails
# the SHA-256 check, and the script says which.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DEST="${1:-$HERE/data}"
PACKAGES=(
    "debian-reference-en=2.100"
    "postgresql-doc-15=15.20-0+deb12u1"
    "python3.11-doc=3.11.2-6+deb12u9"
    "debian-handbook=11.20220922"
    "r-doc-pdf=4.2.2.20221110-2"
    "debmake-doc=1.17-7"
    "previsat=3.5.1.7+dfsg1-5"
    "toppic-common=1.5.3+dfsg1-1"
)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$DEST"
cd "$WORK"
for spec in "${PACKAGES[@]}"; do
    name="${spec%%=*}"
    if ! apt-get download "$spec" >/dev/null 2>&1; then
        echo "fetch: $spec is not in the archive, taking the current $name" >&2
        apt-get download "$name" >/dev/null
    fi
    dpkg-deb -x "$WORK"/"${name}"_*.deb "$WORK/root-$name"
    mkdir -p "$DEST/$name"
    cp "$WORK/root-$name/usr/share/doc/$name/copyright" "$DEST/$name/copyright"
done
failed=0
while IFS=$'\t' read -r set pkg path sha; do
    case "$set" in '#'* | '') continue ;; esac
    rel="${path#/usr/share/}"
    mkdir -p "$(dirname "$DEST/$pkg/$rel")"
    cp "$WORK/root-$pkg$path" "$DEST/$pkg/$rel"
    if [ "$(sha256sum "$DEST/$pkg/$rel" | cut -d' ' -f1)" != "$sha" ]; then
        echo "fetch: $pkg$path differs from the listed SHA-256" >&2
        failed=1
    fi
done <"$HERE/files.tsv"
n="$(grep -vc '^#' "$HERE/files.tsv")"
echo "fetch: $n files under $DEST"
exit "$failed"
