#!/usr/bin/env bash
# cold-fetch.sh [DIR] [SIZE] [TRANSPORT]: what a cold sender reads to send. Four parents of
# SIZE (default 400MiB; oa, LZ4 16 KiB, 64 KiB partitions) served by a `sluice run` node; a
# `sluice stream fetch` of 16 disjoint ranges (every other 1/32 of the ring: half the data);
# the page cache dropped before each of two fetches (root). Prints, per fetch, the bytes the
# node read from the device (/proc/PID/io read_bytes), the bytes received, their ratio, wall
# and the node's CPU; and the time a cold `cat` of every Data.db takes (the device's pace).
# Used for docs/BENCHMARKS.md ("Cold sender reads").
set -euo pipefail
dir="${1:-/tmp/sluice-cold-fetch}"; size="${2:-400MiB}"; transport="${3:-tls}"
bin="$(cd "$(dirname "$0")/.." && pwd)/bin/sluice"
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 2; }
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
"$bin" --log-level warn cert ca --dir tls && "$bin" --log-level warn cert node --dir tls --name n1 &&
	"$bin" --log-level warn cert client --dir tls --name cli
for s in 1 2 3 4; do "$bin" --log-level warn sstable gen --out data --size "$size" --version oa --seed "$s" >/dev/null; done
cat >n1.yaml <<YAML
name: n1
data_dirs: [$dir/data]
stream_addr: 127.0.0.1:7500
admin_addr: 127.0.0.1:7501
tls_dir: $dir/tls
transport: $transport
client_fetch_keyspaces: [sluice]
YAML
ranges="$(python3 -c "
lo=-2**63; w=2**64//32
print(','.join('(%d,%d]' % (lo+i*w, lo+(i+1)*w) for i in range(0, 32, 2)))")"
"$bin" run --config n1.yaml --log-level warn >node.log 2>&1 &
node=$!
trap 'kill $node 2>/dev/null || true' EXIT
sleep 3
for run in 1 2; do
	rm -rf "out$run"
	sync; echo 3 >/proc/sys/vm/drop_caches
	r0=$(awk '/^read_bytes/{print $2}' /proc/$node/io); c0=$(awk '{print $14+$15}' /proc/$node/stat)
	s=$(date +%s.%N)
	"$bin" --log-level warn stream fetch --peer 127.0.0.1:7500 --tls-dir tls --name cli --keyspace sluice --table stress \
		--ranges "$ranges" --out "out$run/sluice/stress-x" --transport "$transport" >/dev/null
	e=$(date +%s.%N)
	r1=$(awk '/^read_bytes/{print $2}' /proc/$node/io); c1=$(awk '{print $14+$15}' /proc/$node/stat)
	recv=$(du -sb "out$run" | cut -f1)
	python3 -c "print('fetch %d: node read %.1f MB from the device, received %.1f MB: %.2fx; wall %.2f s; node cpu %.2f s' % ($run, ($r1-$r0)/1e6, $recv/1e6, ($r1-$r0)/$recv, $e-$s, ($c1-$c0)/100))"
done
sync; echo 3 >/proc/sys/vm/drop_caches
s=$(date +%s.%N); cat data/sluice/stress-*/*-Data.db >/dev/null; e=$(date +%s.%N)
python3 -c "print('cold cat of every Data.db: %.1f MB in %.2f s' % ($(du -cb data/sluice/stress-*/*-Data.db | tail -1 | cut -f1)/1e6, $e-$s))"
