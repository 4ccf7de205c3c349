#!/usr/bin/env bash
# `make run`: the most complete job sluice can do today, on an embedded default workload.
# Generates a 256 MiB LZ4 sstable of the stress-like table (BIG oa) and a BTI (da) one,
# verifies both (extended: every row), describes them, splits the oa one 8 ways without
# rewriting a row and verifies the children, starts a node and fetches half the ring from it
# over QUIC, then verifies every Cassandra-written fixture.
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

step "start a node (sluice run) serving the oa table over QUIC with mutual TLS"
"$bin" --log-level warn cert ca --dir "$work/tls" >/dev/null
"$bin" --log-level warn cert node --dir "$work/tls" --name n1 >/dev/null
"$bin" --log-level warn cert node --dir "$work/tls" --name cli >/dev/null
port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1]=="udp" else socket.SOCK_STREAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1" 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
sport=$(port udp); aport=$(port tcp)
"$bin" run --name n1 --data-dir "$work/oa" --tls-dir "$work/tls" --stream-addr "127.0.0.1:$sport" \
	--admin-addr "127.0.0.1:$aport" --log-format json >"$work/n1.log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
	"$bin" netstats --admin "127.0.0.1:$aport" >/dev/null 2>&1 && break
	sleep 0.1
done

step "fetch two token ranges (about half the ring) from the node: partial sstables, verbatim chunks"
table=$(basename "$(dirname "$data")")
"$bin" stream fetch --peer "127.0.0.1:$sport" --keyspace sluice --table stress \
	--ranges '(-9223372036854775808,-4611686018427387904],(0,4611686018427387904]' \
	--out "$work/fetched/sluice/$table" --tls-dir "$work/tls" --name cli

step "what the node saw (sluice netstats)"
"$bin" netstats --admin "127.0.0.1:$aport"

step "verify what was fetched, reading every row"
for f in "$work/fetched/sluice/$table"/*-Data.db; do
	"$bin" sstable verify --extended "$f"
done
kill -TERM $node && wait $node

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
