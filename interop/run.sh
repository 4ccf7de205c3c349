#!/usr/bin/env bash
# `make interop`: the interop suite (SLUICE_INTEROP=1 go test ./interop/) with its output, then one
# closing line `N passed, M failed, K skipped` over the leaf tests (a test with subtests counts as
# its subtests). Exits non-zero when go test fails. Needs Java 17 and Maven (cassandra.sh fetches
# Cassandra from Maven Central into ~/.m2 on first use).
set -uo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
SLUICE_INTEROP=1 "$GO" test -count=1 -v -timeout "${INTEROP_TIMEOUT:-40m}" ./interop/ "$@" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
awk '
	match($0, /^ *--- (PASS|FAIL|SKIP): [^ ]+/) {
		split(substr($0, RSTART, RLENGTH), f, " ")
		sub(/:$/, "", f[2])
		res[f[3]] = f[2]
	}
	END {
		for (n in res) for (m in res) if (index(m, n "/") == 1) { inner[n] = 1; break }
		for (n in res) if (!(n in inner)) c[res[n]]++
		if (c["PASS"] + c["FAIL"] + c["SKIP"] == 0 && code != 0) c["FAIL"] = 1
		printf "%d passed, %d failed, %d skipped\n", c["PASS"], c["FAIL"], c["SKIP"]
	}' code="$code" "$log"
exit "$code"
