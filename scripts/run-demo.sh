#!/usr/bin/env bash
# `make run`: the most complete job sluice can do today, on an embedded default workload.
# Generates a 256 MiB LZ4 sstable of the stress-like table (BIG oa) and a BTI (da) one,
# verifies both (extended: every row), describes them, splits the oa one 8 ways without
# rewriting a row and verifies the children, then verifies every Cassandra-written fixture.
# Finishes by itself and leaves nothing behind.
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

step "split the oa sstable 8 ways by token range: zero-copy (reflink where the file system can, else copy)"
data=$(ls "$work/oa"/sluice/stress-*/oa-1-big-Data.db)
"$bin" sstable split "$data" --out "$work/split" --ways 8

step "verify every child, reading every row"
for child in "$work/split"/*-Data.db; do
	"$bin" sstable verify --extended "$child"
done

step "the same split by rechunk (no dead bytes) and by the row-by-row rewrite, for comparison"
"$bin" sstable split "$data" --out "$work/rechunk" --ways 8 --mode rechunk | tail -n 1
"$bin" sstable split "$data" --out "$work/rewrite" --ways 8 --mode rewrite | tail -n 1

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
