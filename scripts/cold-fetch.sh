#!/usr/bin/env bash
# cold-fetch.sh [DIR] [SIZE] [TRANSPORT]: what a cold sender reads to send, and how long a cold
# fetch takes against the device. Four parents of SIZE (default 400MiB; oa, LZ4 16 KiB, 64 KiB
# partitions; kept in DIR and reused) served by a `sluice run` node; a `sluice stream fetch` of
# 16 disjoint ranges (every other 1/32 of the ring: half the data); the page cache dropped
# before each fetch (root). Prints, per fetch, the bytes the node read from the device
# (/proc/PID/io read_bytes, its own executable's pages included), the bytes received, their
# ratio, wall, the node's CPU and the device's busy time (/sys/block/DEV/stat); then a cold `dd`
# of as many bytes (a quarter from each Data.db, sequentially): the device's pace.
#   SLUICE_AB=/path/to/other/sluice  alternate the node between bin/sluice and that binary
#                                    (before/after), two fetches each; the client is a copy
#                                    of bin/sluice in both.
#   SLUICE_TRACE=1                   strace the node's opens and sendfiles (use TRANSPORT tcp)
#                                    and print when each parent's frames went and how long the
#                                    data plane waited on the sender before and between them.
# Used for docs/BENCHMARKS.md ("Cold sender reads").
set -euo pipefail
dir="${1:-/tmp/sluice-cold-fetch}"; size="${2:-400MiB}"; transport="${3:-tls}"
bin="$(cd "$(dirname "$0")/.." && pwd)/bin/sluice"
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 2; }
mkdir -p "$dir" && cd "$dir"
if [ ! -d data ]; then
	"$bin" --log-level warn cert ca --dir tls && "$bin" --log-level warn cert node --dir tls --name n1 &&
		"$bin" --log-level warn cert client --dir tls --name cli
	for s in 1 2 3 4; do "$bin" --log-level warn sstable gen --out data --size "$size" --version oa --seed "$s" >/dev/null; done
fi
# The client runs from a copy: pages of an executable the node shares would be read by
# whichever process touched them first.
cp "$bin" client
dev="$(lsblk -no pkname "$(df --output=source data | tail -1)" 2>/dev/null || true)"
dev="${dev:-$(basename "$(df --output=source data | tail -1)")}"
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
nodes=("$bin" "$bin")
[ -n "${SLUICE_AB:-}" ] && nodes=("$SLUICE_AB" "$bin" "$SLUICE_AB" "$bin")
node=""
trap '[ -n "$node" ] && kill $(pgrep -P $node) $node 2>/dev/null || true' EXIT
for nb in "${nodes[@]}"; do
	wrap=()
	[ -n "${SLUICE_TRACE:-}" ] && wrap=(strace -f -tt -e trace=openat,sendfile -o trace)
	"${wrap[@]}" "$nb" run --config n1.yaml --log-level warn >node.log 2>&1 &
	node=$!
	sleep 3
	pid=$node
	[ -n "${SLUICE_TRACE:-}" ] && pid=$(pgrep -P $node)
	rm -rf out
	sync; echo 3 >/proc/sys/vm/drop_caches
	r0=$(awk '/^read_bytes/{print $2}' /proc/$pid/io); c0=$(awk '{print $14+$15}' /proc/$pid/stat)
	d0=$(awk '{print $10}' /sys/block/$dev/stat); s=$(date +%s.%N)
	./client --log-level warn stream fetch --peer 127.0.0.1:7500 --tls-dir tls --name cli --keyspace sluice --table stress \
		--ranges "$ranges" --out "out/sluice/stress-x" --transport "$transport" >/dev/null
	e=$(date +%s.%N); d1=$(awk '{print $10}' /sys/block/$dev/stat)
	r1=$(awk '/^read_bytes/{print $2}' /proc/$pid/io); c1=$(awk '{print $14+$15}' /proc/$pid/stat)
	recv=$(du -sb out | cut -f1)
	kill $(pgrep -P $node) $node 2>/dev/null || true; wait $node 2>/dev/null || true; node=""
	python3 -c "print('%s: node read %.1f MB from the device, received %.1f MB: %.2fx; wall %.2f s; node cpu %.2f s; device busy %.2f s; load %s' % ('$nb', ($r1-$r0)/1e6, $recv/1e6, ($r1-$r0)/$recv, $e-$s, ($c1-$c0)/100, ($d1-$d0)/1000, open('/proc/loadavg').read().split()[0]))"
	[ -z "${SLUICE_TRACE:-}" ] || python3 - trace <<'PY'
import re, sys
t0 = None; fds = {}; pending = {}; per = {}
for l in open(sys.argv[1]):
    m = re.match(r'(\d+)\s+(\d+):(\d+):([\d.]+) (.*)', l)
    if not m:
        continue
    pid, rest = m[1], m[5]
    t = int(m[2]) * 3600 + int(m[3]) * 60 + float(m[4])
    if rest.startswith('openat(') and '-Data.db' in rest and 'snapshots' in rest:
        t0 = t if t0 is None else t0
        fd = re.search(r'= (\d+)', rest)
        if fd:
            fds[int(fd[1])] = rest.split('"')[1].split('/')[-1]
        else:
            pending[pid] = rest.split('"')[1].split('/')[-1]
    elif rest.startswith('<... openat resumed>') and pid in pending and re.search(r'= (\d+)', rest):
        fds[int(re.search(r'= (\d+)', rest)[1])] = pending.pop(pid)
    elif rest.startswith('sendfile(') and t0 is not None:
        fd = int(rest[9:].split(',')[1])
        if fd in fds:
            p = per.setdefault(fds[fd], [t - t0, t - t0]); p[1] = t - t0
prev = idle = 0; out = []
for name, (a, b) in sorted(per.items(), key=lambda x: x[1][0]):
    out.append('%s %.2f-%.2f s' % (name, a, b)); idle += a - prev; prev = b
print('  frames from the first Data.db open: %s; the data plane waited on the sender %.2f s of %.2f s' % (', '.join(out), idle, prev))
PY
done
sync; echo 3 >/proc/sys/vm/drop_caches
q=$((recv / 4 / 1048576))
s=$(date +%s.%N); for f in data/sluice/stress-*/*-Data.db; do dd if="$f" of=/dev/null bs=1M count=$q status=none; done; e=$(date +%s.%N)
python3 -c "print('cold dd of %d MiB (a quarter from each Data.db): %.2f s; load %s' % ($q*4, $e-$s, open('/proc/loadavg').read().split()[0]))"
