package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/printable"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/stream"
)

func newNetstatsCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "netstats [--admin HOST:PORT] [--json]",
		Short: "Show a running node's stream sessions",
		Long: `Show the stream sessions of a running node, like nodetool netstats: per session the
peer, direction, table, state, files and bytes done out of the total, the current rate and the
time left at that rate ("-" when unknown), then the totals. --json prints the admin API's
answer (GET /v1/streams) unchanged.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newAdminClient(admin)
			if err != nil {
				return err
			}
			var resp adminapi.StreamsResponse
			if err := c.call(cmd.Context(), http.MethodGet, "/v1/streams", nil, &resp); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), resp)
			}
			return printNetstats(cmd.OutOrStdout(), resp.Sessions)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	return cmd
}

// finished reports whether a session's state is final, so its rate no longer means anything.
func finished(s stream.SessionStatus) bool {
	return s.State == "complete" || s.State == "failed"
}

// printNetstats prints one line per session, the totals and any session errors.
func printNetstats(w io.Writer, sessions []stream.SessionStatus) error {
	if len(sessions) == 0 {
		_, err := fmt.Fprintln(w, "No streams.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tDIRECTION\tOPERATION\tTABLE\tSTATE\tFILES\tBYTES\tRATE\tETA")
	var filesDone, filesTotal int
	var bytesDone, bytesTotal, activeLeft int64
	var rate float64
	for _, s := range sessions {
		op := s.Operation
		if op == "" {
			op = "-"
		}
		r, eta := "-", "-"
		if !finished(s) {
			r, eta = formatRate(s.RateBytes), formatETA(s.BytesTotal-s.BytesDone, s.RateBytes)
			rate += max(s.RateBytes, 0)
			activeLeft += max(s.BytesTotal-s.BytesDone, 0)
		}
		// Peer, names, state and error come from peers: escaped, a session cannot drive the
		// operator's terminal.
		p := printable.String
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s.%s\t%s\t%d/%d\t%s\t%s\t%s\n", p(s.Peer), p(string(s.Direction)), p(op), p(s.Keyspace), p(s.Table),
			p(s.State), s.FilesDone, s.FilesTotal, formatProgress(s.BytesDone, s.BytesTotal), r, eta)
		filesDone += s.FilesDone
		filesTotal += s.FilesTotal
		bytesDone += s.BytesDone
		bytesTotal += s.BytesTotal
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Total: %d sessions, %d/%d files, %s, %s, ETA %s\n", len(sessions), filesDone, filesTotal,
		formatProgress(bytesDone, bytesTotal), formatRate(rate), formatETA(activeLeft, rate))
	for _, s := range sessions {
		if s.Error != "" {
			p := printable.String
			fmt.Fprintf(w, "Session %s with %s (%s.%s) %s: %s\n", p(s.ID), p(s.Peer), p(s.Keyspace), p(s.Table), p(s.State), p(s.Error))
		}
	}
	return nil
}

// formatProgress prints "done/total (pct%)", the percentage "-" when the total is unknown.
func formatProgress(done, total int64) string {
	pct := "-"
	if total > 0 {
		pct = fmt.Sprintf("%.1f%%", float64(done)*100/float64(total))
	}
	return fmt.Sprintf("%s/%s (%s)", formatBytes(done), formatBytes(total), pct)
}

// formatRate prints bytes per second, "-" when no rate is known.
func formatRate(r float64) string {
	if !(r > 0) || math.IsInf(r, 0) {
		return "-"
	}
	return formatBytes(int64(r)) + "/s"
}

// formatETA is the time to move left bytes at rate, rounded up to a second; "-" when the rate
// is unknown or nothing is left.
func formatETA(left int64, rate float64) string {
	if left <= 0 || !(rate > 0) || math.IsInf(rate, 0) {
		return "-"
	}
	secs := math.Ceil(float64(left) / rate)
	if secs > float64(math.MaxInt64/int64(time.Second)) {
		return "-"
	}
	return (time.Duration(secs) * time.Second).String()
}
