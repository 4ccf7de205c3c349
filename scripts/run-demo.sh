#!/usr/bin/env bash
# `make run`: sluice's main job on an embedded default workload, in under two minutes.
# First a short tour of the format layer (generate, verify every row, split zero-copy, verify
# the children), then the cluster: three `sluice` node processes on loopback at RF 2, seeded
# by ownership; a fourth bootstraps with live progress; one decommissions; the invariant
# check (every partition on exactly its replicas, byte-identical, no temporary files, every
# sstable verifies); a summary table. Finishes by itself and leaves nothing running.
set -euo pipefail
bin=${1:-bin/sluice}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-run.XXXXXX")
demo=
cleanup() {
	# The demo stops its nodes itself; on any other exit (an error, ^C) they go with it:
	# killing the demo's process group's leader is not enough, so signal it and wait.
	if [ -n "$demo" ] && kill -0 "$demo" 2>/dev/null; then
		kill -TERM "$demo" 2>/dev/null || true
		wait "$demo" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n== %s\n' "$*"; }

step "generate a 64 MiB sstable (BIG oa, LZ4) and verify it, reading every row"
"$bin" sstable gen --out "$work/oa" --version oa --size 64MiB --seed 42
data=$(ls "$work/oa"/sluice/stress-*/oa-1-*-Data.db)
"$bin" sstable verify --extended "$data"

step "split it 4 ways by token range without rewriting a row, and verify every child"
"$bin" sstable split "$data" --out "$work/split" --ways 4
for child in "$work/split"/*-Data.db; do
	"$bin" sstable verify --extended "$child" >/dev/null
done
echo "all 4 children verify"

step "the cluster: 3 nodes at RF 2, bootstrap a 4th, decommission one, check every partition"
"$bin" --log-level warn testcluster demo --nodes 3 --rf 2 --data 768MiB --dir "$work/cluster" &
demo=$!
wait "$demo"
demo=
