# sluice — see README.md. `make run` and `make test` are the two set-up commands.
GO       ?= go
BIN      := bin/sluice
PKGS     := ./...
# Race detector on everything: the suite is sized so this stays within CI's budget.
TESTFLAGS ?= -race -timeout 20m

.PHONY: all build run test vet fmt-check bench fuzz test-reflink drills drills-cassandra bench-cassandra bench-sidecar interop jmx-class clean

all: build

# Static (no cgo, so no libc and no dynamic loader at start-up): ld.so's relocations and its
# CPU-feature probing (each CPUID a hypervisor exit in a VM) cost a short command such as
# `sstable split` about 1 ms of its start; sluice has no C code, and without cgo the net
# package resolves names in Go and os/user reads /etc/passwd.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/sluice

## run: the main job on an embedded default (see README "make run").
run: build
	./scripts/run-demo.sh $(BIN)

## test: the whole suite, what CI runs.
test: vet fmt-check
	$(GO) test $(TESTFLAGS) $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## bench: Go benchmarks of the format layer (allocations reported).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -benchmem ./sstable/...

## fuzz: a short pass over every fuzz target (FUZZTIME per target).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

## test-reflink: the tests that need root and a loop-mounted XFS (also part of `make test` when root).
test-reflink:
	$(GO) test -v -run 'Reflink|Clone|XFS' ./internal/lib/fsx/... ./sstable/...

## drills: every cluster drill as node processes at a larger size than CI's (root for disk-full;
## DRILL_NET=netns puts every node in its own network namespace, root too).
DRILL_DATA ?= 64MiB
DRILL_NET ?= loopback
drills: build
	$(BIN) --log-level warn testcluster drill all --data $(DRILL_DATA) --net $(DRILL_NET)

## drills-cassandra: sluice as the sidecar of live Cassandra 5.0 nodes (the ring over CQL,
## sluice cassandra ring, imports through nodetool import, serving the live data; sluice cassandra
## rebuild and load between the nodes' sidecars, beside nodetool rebuild and sstableloader; the load
## drill on three dc1 nodes at RF 2 with its faults, at DRILL_LOAD_PARTITIONS x 5 rows of 1,000
## characters, ~200 MB written; `make interop` runs it at 3,000); Java 17, Maven.
DRILL_LOAD_PARTITIONS ?= 20000
drills-cassandra:
	SLUICE_INTEROP=1 SLUICE_SIDECAR_LOAD_PARTITIONS=$(DRILL_LOAD_PARTITIONS) $(GO) test -count=1 -v -timeout 40m \
	  -run 'TestCassandraSidecar$$|TestCassandraSidecarRebuild|TestCassandraSidecarLoad' ./interop/

## bench-sidecar: sluice cassandra load against sstableloader (~391 MiB into three dc1 nodes at RF 2)
## and sluice cassandra rebuild dc1 against nodetool rebuild -- dc1 (~241 MiB), in one run on live
## Cassandra 5.0.7 nodes, wall and CPU per side; prints the table docs/BENCHMARKS.md keeps.
## SIDECAR_JMX=1 (default) imports through the sidecars' JMX client, 0 through nodetool import;
## SIDECAR_TRANSPORT is the sidecars' stream data plane (default tls, the recommended one).
SIDECAR_JMX ?= 1
SIDECAR_TRANSPORT ?= tls
bench-sidecar:
	SLUICE_INTEROP=1 SLUICE_BENCH_SIDECAR=1 SLUICE_SIDECAR_JMX=$(SIDECAR_JMX) SLUICE_SIDECAR_TRANSPORT=$(SIDECAR_TRANSPORT) \
	  $(GO) test -count=1 -v -timeout 60m \
	  -run 'TestBenchSidecarLoadRebuild' ./interop/

## bench-cassandra: sluice side by side with Cassandra 5.0.7's own tools on the same files: sstablesplit
## against sluice sstable split (ext4, and XFS with reflink as root), cold, whole processes
## (SLUICE_BENCH_SIZE, default 1GiB); then a second node's bootstrap by Cassandra's streaming
## against sluice's fetch + import of the same ranges on the tls plane (live nodes on
## 127.0.2.1-2, four CQLSSTableWriter sstables of SLUICE_BENCH_SIZE each, default 400MiB; root
## for the cold runs). Prints the tables docs/BENCHMARKS.md keeps. Java 17, Maven.
bench-cassandra:
	SLUICE_INTEROP=1 SLUICE_BENCH_SPLIT=1 SLUICE_BENCH_BOOTSTRAP=1 $(GO) test -count=1 -v -timeout 90m \
		-run 'TestBenchSplitAgainstSSTableSplit|TestBenchBootstrapAgainstCassandra' ./interop/

## interop: Apache Cassandra 5.0 (cassandra-all from Maven Central, cached in ~/.m2) reads, verifies and
## merges what sluice writes; needs Java 17 and Maven. Ends with `N passed, M failed, K skipped`.
interop:
	./interop/run.sh

## jmx-class: recompile the sidecar's JMX client (internal/cassandra/java, embedded in the binary)
## for Java 11+ and record its source's SHA-256, which TestJMXClassIsFresh checks; needs a JDK.
jmx-class:
	javac --release 11 -Xlint:all -Werror -d internal/cassandra/java internal/cassandra/java/SluiceJMX.java
	cd internal/cassandra/java && sha256sum SluiceJMX.java > SluiceJMX.java.sha256

clean:
	rm -rf bin
