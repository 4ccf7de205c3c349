package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/bench"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
)

// benchStreamHelpers are the hidden child processes of `sluice bench stream`: a measuring
// wrapper and the two ends of the raw quic-go and raw TCP transfers.
func benchStreamHelpers() []*cobra.Command {
	return []*cobra.Command{newBenchMeasureCmd(), newQUICRawServeCmd(), newQUICRawFetchCmd(), newTCPRawServeCmd(), newTCPRawFetchCmd()}
}

func newBenchMeasureCmd() *cobra.Command {
	var report, cpuprofile, memprofile, heapprofile string
	cmd := &cobra.Command{
		Use:    "measure --report FILE [--cpuprofile FILE] [--memprofile FILE] [--heapprofile FILE] -- SLUICE-ARGS...",
		Short:  "Run a sluice command in this process and report its heap allocation (bench stream's child)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				// SLUICE_BENCH_TRACE=1: an execution trace next to the profile, for what
				// waits on what (go tool trace).
				if os.Getenv("SLUICE_BENCH_TRACE") != "" {
					t, err := os.Create(strings.TrimSuffix(cpuprofile, ".pprof") + ".trace")
					if err != nil {
						return err
					}
					defer t.Close()
					if err := trace.Start(t); err != nil {
						return err
					}
					defer trace.Stop()
				}
			}
			var peak *peakHeapProfiler
			if heapprofile != "" {
				peak = startPeakHeapProfile()
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			code := run(args, cmd.OutOrStdout(), cmd.ErrOrStderr())
			wall := time.Since(start)
			runtime.ReadMemStats(&after)
			if cpuprofile != "" {
				pprof.StopCPUProfile()
			}
			if memprofile != "" {
				if err := writeAllocsProfile(memprofile); err != nil {
					return err
				}
			}
			if peak != nil {
				if err := peak.stop(heapprofile); err != nil {
					return err
				}
			}
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			rss, _ := bench.PeakRSS(os.Getpid())
			b, err := json.Marshal(bench.MeasureReport{HeapBytes: after.TotalAlloc - before.TotalAlloc, Mallocs: after.Mallocs - before.Mallocs,
				CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), Wall: wall.Seconds(), ExitCode: code, PeakRSS: rss})
			if err != nil {
				return err
			}
			if err := os.WriteFile(report, b, 0o644); err != nil {
				return err
			}
			if code != 0 {
				// The command printed its own error.
				return failedError{}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&report, "report", "", "file the JSON report is written to")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the command here")
	cmd.Flags().StringVar(&memprofile, "memprofile", "", "write an allocation profile of the command here")
	cmd.Flags().StringVar(&heapprofile, "heapprofile", "", "write the heap profile taken when the live heap was largest here")
	_ = cmd.MarkFlagRequired("report")
	return cmd
}

func writeAllocsProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newQUICRawServeCmd() *cobra.Command {
	var file, addr, tlsDir, name string
	var window int64
	var buffer int
	cmd := &cobra.Command{
		Use:    "quic-raw-serve --file F --addr HOST:PORT --tls-dir D --name NAME",
		Short:  "Serve a file's bytes over raw QUIC streams until SIGTERM (bench stream's limit sender)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := tlsx.Load(tlsDir, name)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.RawServe(ctx, bench.RawServeOptions{File: file, Addr: addr, TLS: id.ServerConfig(), BufferSize: buffer, StreamWindow: window},
				func(a string) { fmt.Fprintf(cmd.OutOrStdout(), "{\"addr\":%q}\n", a) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "file to serve")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "UDP address to listen on")
	f.StringVar(&tlsDir, "tls-dir", "tls", "directory of ca.crt and NAME.crt/NAME.key")
	f.StringVar(&name, "name", "", "identity: the certificate NAME in --tls-dir")
	f.Int64Var(&window, "stream-window", 0, "maximum stream receive window in bytes (0: stream's)")
	f.IntVar(&buffer, "buffer", 0, "bytes per Write (0: 1 MiB, stream's frame payload)")
	return cmd
}

func newQUICRawFetchCmd() *cobra.Command {
	var peer, out, tlsDir, name string
	var length, window int64
	var buffer int
	cmd := &cobra.Command{
		Use:    "quic-raw-fetch --peer HOST:PORT --length N --out FILE --tls-dir D --name NAME",
		Short:  "Receive N bytes over one raw QUIC stream into a file and fsync it (bench stream's limit receiver)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := tlsx.Load(tlsDir, name)
			if err != nil {
				return err
			}
			res, err := bench.RawFetch(cmd.Context(), bench.RawFetchOptions{Peer: peer, Length: length, Out: out,
				TLS: id.ClientConfig(hostOf(peer)), BufferSize: buffer, StreamWindow: window})
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&peer, "peer", "", "the raw server's address host:port")
	f.Int64Var(&length, "length", 0, "bytes to fetch")
	f.StringVar(&out, "out", "", "file to write")
	f.StringVar(&tlsDir, "tls-dir", "tls", "directory of ca.crt and NAME.crt/NAME.key")
	f.StringVar(&name, "name", "", "identity: the certificate NAME in --tls-dir")
	f.Int64Var(&window, "stream-window", 0, "maximum stream receive window in bytes (0: stream's)")
	f.IntVar(&buffer, "buffer", 0, "bytes per Write (0: 1 MiB, stream's frame payload)")
	return cmd
}

func newTCPRawServeCmd() *cobra.Command {
	var file, addr, tlsDir, name string
	cmd := &cobra.Command{
		Use:    "tcp-raw-serve --file F --addr HOST:PORT [--tls-dir D --name NAME]",
		Short:  "Serve a file's bytes over plain TCP with sendfile, or over TLS, until SIGTERM (bench stream's TCP and TLS limit sender)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var conf *tls.Config
			if tlsDir != "" {
				id, err := tlsx.Load(tlsDir, name)
				if err != nil {
					return err
				}
				conf = id.ServerConfig()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.RawTCPServe(ctx, file, addr, conf, func(a string) { fmt.Fprintf(cmd.OutOrStdout(), "{\"addr\":%q}\n", a) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "file to serve")
	f.StringVar(&addr, "addr", "127.0.0.1:0", "TCP address to listen on")
	f.StringVar(&tlsDir, "tls-dir", "", "serve over TLS with ca.crt and NAME.crt/NAME.key of this directory (default: plain TCP)")
	f.StringVar(&name, "name", "", "identity: the certificate NAME in --tls-dir")
	return cmd
}

func newTCPRawFetchCmd() *cobra.Command {
	var peer, out, tlsDir, name string
	var length int64
	cmd := &cobra.Command{
		Use:    "tcp-raw-fetch --peer HOST:PORT --length N --out FILE [--tls-dir D --name NAME]",
		Short:  "Receive N bytes over plain TCP, spliced into a file, or over TLS, and fsync it (bench stream's TCP and TLS limit receiver)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var conf *tls.Config
			if tlsDir != "" {
				id, err := tlsx.Load(tlsDir, name)
				if err != nil {
					return err
				}
				conf = id.ClientConfig(hostOf(peer))
			}
			res, err := bench.RawTCPFetch(cmd.Context(), peer, length, out, conf)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&peer, "peer", "", "the raw TCP server's address host:port")
	f.Int64Var(&length, "length", 0, "bytes to fetch")
	f.StringVar(&out, "out", "", "file to write")
	f.StringVar(&tlsDir, "tls-dir", "", "fetch over TLS with ca.crt and NAME.crt/NAME.key of this directory (default: plain TCP)")
	f.StringVar(&name, "name", "", "identity: the certificate NAME in --tls-dir")
	return cmd
}
