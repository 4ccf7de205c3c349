package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

func newStreamCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Move token ranges of sstables between nodes",
		Args:  noArgs,
	}
	cmd.AddCommand(newFetchCmd())
	return cmd
}

// fetchReport is `stream fetch --json`; field names are a scripting interface.
type fetchReport struct {
	SSTables []fetchedSSTable `json:"sstables"`
	Skipped  []string         `json:"skipped"`
	Failed   []string         `json:"failed"`
	Bytes    int64            `json:"bytes_received"`
	Wall     float64          `json:"wall_seconds"`
}

type fetchedSSTable struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Partitions int64  `json:"partitions"`
	Bytes      int64  `json:"bytes"`
	Runs       int    `json:"runs"`
	// FillerPartitions: empty partitions in the gaps between runs, addressed by the index.
	FillerPartitions int64 `json:"filler_partitions"`
	FillerBytes      int64 `json:"filler_bytes"`
	ReencodedBytes   int64 `json:"reencoded_bytes"`
}

func newFetchCmd() *cobra.Command {
	var peer, ks, table, spec, out, tlsDir, name, partitioner, transport, congestion string
	var asJSON, resume, fillAfter bool
	var sessions int
	cmd := &cobra.Command{
		Use:   "fetch --peer HOST:PORT --keyspace KS --table T --ranges SPEC --out DIR [--tls-dir D] [--name NAME] [--json]",
		Short: "Pull token ranges of a table from a running node into a table directory",
		Long: `Pull the parts of KS.T's sstables in SPEC from the node at --peer (QUIC, mutual TLS with the
cluster CA in --tls-dir and the client identity --name) into DIR, a Cassandra-layout table
directory. Sstables the ranges cover whole arrive as they are; the others as partial sstables:
verbatim compressed chunks plus rebuilt index components. Every received chunk is checked and
every sstable verified before it is installed atomically. --resume skips what an interrupted
fetch into DIR already installed. SPEC is a comma-separated list of (left,right] ranges.
--sessions N runs N sessions at once over contiguous shares of the ranges (one connection,
one sender pipeline and one receiver pipeline each).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for flag, v := range map[string]string{"--peer": peer, "--keyspace": ks, "--table": table, "--ranges": spec, "--out": out} {
				if v == "" {
					return usagef("stream fetch: %s is required", flag)
				}
			}
			if err := checkNames("stream fetch", ks, table, true); err != nil {
				return err
			}
			switch {
			case sessions < 1 || sessions > 16:
				return usagef("stream fetch: --sessions %d: want 1 to 16", sessions)
			case transport != stream.TransportQUIC && transport != stream.TransportTLS && transport != stream.TransportTCP:
				return usagef("stream fetch: --transport %q: want quic, tls or tcp", transport)
			case congestion != "" && transport == stream.TransportQUIC:
				return usagef("stream fetch: --tcp-congestion needs --transport tls or tcp")
			}
			p, err := token.ForName(partitioner)
			if err != nil {
				return usageError{err}
			}
			ranges, err := parseRanges(p, spec)
			if err != nil {
				return err
			}
			id, err := tlsx.Load(tlsDir, name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			progress := func(s stream.SessionStatus) {
				if s.BytesTotal <= 0 {
					return
				}
				if bar == nil {
					bar = progressbar.NewOptions64(s.BytesTotal, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowBytes(true),
						progressbar.OptionSetDescription("fetch "+ks+"."+table+" from "+peer), progressbar.OptionThrottle(100*time.Millisecond))
				}
				_ = bar.Set64(s.BytesDone)
			}
			if asJSON || !term.IsTerminal(int(os.Stderr.Fd())) {
				progress = nil
			}
			res, ferr := stream.FetchSessions(cmd.Context(), stream.Config{Node: name, Transport: transport, TCPCongestion: congestion, FillAfterReceive: fillAfter}, id.ClientConfig(hostOf(peer)),
				stream.FetchRequest{Peer: peer, Keyspace: ks, Table: table, Ranges: ranges, Dir: out, Resume: resume}, sessions, progress)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if res == nil {
				return ferr
			}
			rep := fetchReport{SSTables: []fetchedSSTable{}, Skipped: res.Skipped, Failed: []string{}, Bytes: res.BytesReceived, Wall: res.Wall.Seconds()}
			for _, f := range res.SSTables {
				rep.SSTables = append(rep.SSTables, fetchedSSTable{Path: f.Path + "-Data.db", Kind: f.Kind, Partitions: f.Partitions, Bytes: f.Bytes,
					Runs: f.Runs, FillerPartitions: f.FillerPartitions, FillerBytes: f.FillerBytes, ReencodedBytes: f.ReencodedBytes})
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			for _, e := range res.Failed {
				rep.Failed = append(rep.Failed, e.Error())
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				for _, f := range rep.SSTables {
					fmt.Fprintf(w, "%s  %s  %d partitions%s  %d bytes  %d runs\n", f.Path, f.Kind, f.Partitions, fillerNote(f.FillerPartitions), f.Bytes, f.Runs)
				}
				for _, f := range rep.Failed {
					fmt.Fprintf(w, "failed: %s\n", f)
				}
				fmt.Fprintf(w, "%d sstables, %d bytes in %.2fs (%.1f MB/s)\n", len(rep.SSTables), rep.Bytes, rep.Wall, float64(rep.Bytes)/max(rep.Wall, 1e-9)/1e6)
			}
			return ferr
		},
	}
	f := cmd.Flags()
	f.StringVar(&peer, "peer", "", "the node's stream address host:port")
	f.StringVar(&ks, "keyspace", "", "keyspace")
	f.StringVar(&table, "table", "", "table")
	f.StringVar(&spec, "ranges", "", "token ranges, e.g. (-100,250],(250,-100]")
	f.StringVar(&out, "out", "", "target table directory (Cassandra layout <ks>/<table>-<id>/)")
	f.StringVar(&tlsDir, "tls-dir", "tls", "directory of ca.crt and NAME.crt/NAME.key")
	f.StringVar(&name, "name", "cli", "client identity: the certificate NAME in --tls-dir")
	f.StringVar(&partitioner, "partitioner", "Murmur3Partitioner", "partitioner the ranges are in")
	f.StringVar(&transport, "transport", stream.TransportQUIC, "data plane: quic; tls (TLS 1.3 over TCP, mutually authenticated: the fast path); or tcp (unencrypted bulk bytes, trusted networks only). tls and tcp are used when the node runs the same transport")
	f.StringVar(&congestion, "tcp-congestion", "", "TCP congestion control of the tls/tcp data connection, e.g. bbr (default: the kernel's)")
	f.BoolVar(&fillAfter, "fill-after-receive", false, "receive each compressed partial as the sender laid it out, then fill a copy (twice the writes and free space) instead of filling it as it arrives: for a sender whose sstables hold bytes no partition owns")
	f.BoolVar(&resume, "resume", false, "skip sstables an interrupted fetch into --out already installed (give the same --sessions)")
	f.IntVar(&sessions, "sessions", 1, "sessions at once, each over its own connection and a contiguous share of the ranges (Murmur3; ranges halved when fewer than N): more cores at work on both ends, e.g. 2 as Cassandra keeps two files in flight; a parent whose partitions fall in several shares arrives as one child per share")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// hostOf is the server name to verify the peer's certificate against: the host of host:port.
func hostOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			h := addr[:i]
			if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
				h = h[1 : len(h)-1]
			}
			return h
		}
	}
	return addr
}
