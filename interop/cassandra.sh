#!/usr/bin/env bash
# The interop harness's Java side: fetch Apache Cassandra from Maven Central into ~/.m2 (once), compile the harness
# against it (once per source change) and run it. Used by the Go suite in this directory and by `make interop`.
#
#   interop/cassandra.sh classpath     print the classpath (fetching first if needed)
#   interop/cassandra.sh build         fetch + compile, print the classes directory
#   interop/cassandra.sh run ARGS...   run Harness ARGS (check ... | write ...)
#   interop/cassandra.sh java ARGS...  run java with the Cassandra classpath and JVM flags (main class and args given)
#   interop/cassandra.sh tool MAIN ARGS...  run one of Cassandra's own tools (e.g. org.apache.cassandra.tools.SSTableExport)
#                                     of CASSANDRA_VERSION (any version: no harness), with a generated cassandra.yaml
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${CASSANDRA_VERSION:-5.0.7}"
cache="${SLUICE_INTEROP_CACHE:-$HOME/.cache/sluice-interop}/$version"
mkdir -p "$cache"

classpath() {
	if [ ! -s "$cache/classpath" ]; then
		(cd "$here" && mvn -q -B -Dcassandra.version="$version" dependency:build-classpath \
			-Dmdep.outputFile="$cache/classpath.tmp" >&2)
		mv "$cache/classpath.tmp" "$cache/classpath"
	fi
	cat "$cache/classpath"
}

build() {
	local cp src sum
	cp="$(classpath)"
	sum="$(cat "$here"/harness/*.java | sha256sum | cut -c1-16)"
	if [ ! -f "$cache/classes-$sum/Harness.class" ]; then
		rm -rf "$cache"/classes-*
		mkdir -p "$cache/classes-$sum.tmp"
		javac -nowarn -d "$cache/classes-$sum.tmp" -cp "$cp" "$here"/harness/*.java >&2
		mv "$cache/classes-$sum.tmp" "$cache/classes-$sum"
	fi
	echo "$cache/classes-$sum"
}

# The JVM flags Cassandra's own tools use on Java 17 (conf/jvm17-clients.options), and a small heap.
jvmflags=(
	-Xmx1g -XX:+UseParallelGC -XX:TieredStopAtLevel=1 -Xss512k
	-Dlogback.configurationFile="$here/harness/logback.xml"
	-Dcassandra.storagedir=/nonexistent
	-Djdk.attach.allowAttachSelf=true
	--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
	--add-exports java.base/jdk.internal.ref=ALL-UNNAMED
	--add-exports java.base/sun.nio.ch=ALL-UNNAMED
	--add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
	--add-exports java.sql/java.sql=ALL-UNNAMED
	--add-opens java.base/java.lang.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.loader=ALL-UNNAMED
	--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
	--add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
	--add-opens java.base/jdk.internal.math=ALL-UNNAMED
	--add-opens java.base/jdk.internal.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
	--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
	--add-opens java.base/java.io=ALL-UNNAMED
	--add-opens java.base/java.nio=ALL-UNNAMED
	--add-opens java.base/sun.nio.ch=ALL-UNNAMED
	--add-opens java.base/java.lang=ALL-UNNAMED
	--add-opens java.base/java.util=ALL-UNNAMED
	--add-opens java.base/java.util.concurrent=ALL-UNNAMED
	--add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED
	--add-opens java.base/java.net=ALL-UNNAMED
)

case "${1:-}" in
classpath) classpath ;;
build) build ;;
run)
	shift
	classes="$(build)"
	exec java "${jvmflags[@]}" -cp "$classes:$(classpath)" Harness "$@"
	;;
java)
	shift
	classes="$(build)"
	exec java "${jvmflags[@]}" -cp "$classes:$(classpath)" "$@"
	;;
tool)
	shift
	dir="$(mktemp -d)"
	trap 'rm -rf "$dir"' EXIT
	cat >"$dir/cassandra.yaml" <<YAML
cluster_name: interop
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
data_file_directories: [$dir/data]
commitlog_directory: $dir/commitlog
saved_caches_directory: $dir/saved_caches
hints_directory: $dir/hints
commitlog_sync: periodic
commitlog_sync_period_in_ms: 10000
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:7000"
YAML
	java "${jvmflags[@]}" -Dcassandra.config="file://$dir/cassandra.yaml" -cp "$(classpath)" "$@"
	;;
*)
	echo "usage: $0 classpath|build|run ARGS|java ARGS|tool MAIN ARGS" >&2
	exit 2
	;;
esac
