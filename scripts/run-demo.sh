#!/usr/bin/env bash
# `make run`: the most complete job sluice can do today, on an embedded default workload.
# Generates a 256 MiB LZ4 sstable of the stress-like table (BIG oa) and a BTI (da) one,
# verifies both (extended: every row), describes them and lists a few keys. Finishes by itself
# and leaves nothing behind.
set -euo pipefail
bin=${1:-bin/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-run.XXXXXX")
trap 'rm -rf "$work"' EXIT

step() { printf '\n== %s\n' "$*"; }

for v in oa da; do
	step "generate a 256 MiB $v sstable (64 KiB partitions of 4 KiB rows, LZ4, 16 KiB chunks)"
	"$bin" sstable gen --out "$work/$v" --version "$v" --size 256MiB --seed 42
	data=$(ls "$work/$v"/sluice/stress-*/"$v"-1-*-Data.db)

	step "verify it, reading every row"
	"$bin" sstable verify --extended "$data"

	step "describe it"
	"$bin" sstable describe "$data"

	step "its first three partitions"
	# head closes the pipe after three lines; the writer's SIGPIPE is expected.
	{ "$bin" sstable keys --json "$data" || true; } | head -n 3
done

step "verify every real Cassandra fixture under ../shared/testdata/cassandra"
fixtures=../shared/testdata/cassandra
if [ -d "$fixtures" ]; then
	n=0
	while IFS= read -r data; do
		"$bin" sstable verify --extended "$data" >/dev/null
		n=$((n + 1))
	done < <(find "$fixtures" -name '*-Data.db' | sort)
	echo "all $n Cassandra-written fixtures verify"
fi
