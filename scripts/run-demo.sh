#!/usr/bin/env bash
# `make run`: sluice's main job on an embedded default workload, in under two minutes.
# First a short tour of the format layer (generate, verify every row, split zero-copy, verify
# the children), then the cluster: three `sluice` node processes at RF 3 with 16 tokens each,
# every node seeded with 4 overlapping flush-like sstables of the ranges it replicates; a
# fourth bootstraps with live progress; the others clean up; one decommissions; the invariant
# check (reconciled content of every partition on exactly its replicas, no temporary files,
# every sstable verifies); a summary. The last line is the verdict: "all checks passed" or
# what failed. Everything runs in a temporary directory that is removed at the end; it leaves
# nothing running.
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
trap 'echo; echo "FAILED: $current"' ERR
current=

step() { current=$*; printf '\n== %s\n' "$*"; }
# The format tour's files live in the temporary directory: show what the commands say about
# them, not their paths.
unpath() { sed -e "s#$work/[^ :]*/##g" -e "s#$work/##g"; }

step "generate a 64 MiB sstable (BIG oa, LZ4) and verify it, reading every row"
"$bin" sstable gen --out "$work/oa" --version oa --size 64MiB --seed 42 | unpath
data=$(ls "$work/oa"/sluice/stress-*/oa-1-*-Data.db)
"$bin" sstable verify --extended "$data" | unpath

step "split it 4 ways by token range without rewriting a row, and verify every child"
"$bin" sstable split "$data" --out "$work/split" --ways 4 | unpath
cat <<'TXT'
   mode: how the children's Data.db bytes were made: reflink (extents shared with the parent,
   on XFS or btrfs), copy (copy_file_range of whole compressed chunks: this ext4 cannot
   reflink), rechunk or rewrite. cloned: bytes shared with the parent by reflink (0 on a
   copy). filler: empty partitions where the chunk grid leaves a gap before a child's first
   partition, so that Cassandra reads every byte of the child as a partition; they hold
   nothing, and compaction drops them. Every child passes verify --strict: Cassandra's own
   sequential rules (first partition at 0, no byte outside a partition).
TXT
for child in "$work/split"/*-Data.db; do
	"$bin" sstable verify --extended --strict "$child" >/dev/null
done
echo "all 4 children verify, strictly"

step "the cluster"
trap - ERR # from here the demo prints the verdict itself
"$bin" --log-level warn testcluster demo --data 512MiB &
demo=$!
wait "$demo"
