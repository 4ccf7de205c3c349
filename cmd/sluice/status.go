package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/lib/printable"
	"github.com/sluicedb/sluice/internal/node"
)

// statusEntry is one node in `sluice status --json`.
type statusEntry struct {
	Name       string  `json:"name"`
	State      string  `json:"state"`
	Up         bool    `json:"up"`
	LoadBytes  int64   `json:"load_bytes"` // -1 when the node could not be asked
	Ownership  float64 `json:"ownership"`
	Tokens     int     `json:"tokens"`
	DC         string  `json:"dc"`
	Rack       string  `json:"rack"`
	StreamAddr string  `json:"stream_addr"`
	// Identity is proven, pending or refused; only proven members own ranges.
	Identity      string `json:"identity"`
	IdentityError string `json:"identity_error,omitempty"`
}

func newStatusCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--admin HOST:PORT] [--json]",
		Short: "Show the cluster as a node sees it",
		Long: `Show every member of the cluster as the node at --admin sees it, like nodetool status: per
data centre, each node's status (U up, D down) and state (N normal, J joining, L leaving,
M moving, X left), load, token count, ownership (the fraction of the ring it replicates under the
first configured keyspace's replication) and rack. --json prints a list of
{name, state, up, load_bytes, ownership, tokens, dc, rack, stream_addr, identity}. A member
whose identity is not proven (its certificate checked against the cluster CA at its stream
address) owns nothing and is listed under the table with the reason.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var v adminapi.RingView
			if err := adminGet(cmd.Context(), admin, "/v1/ring", &v); err != nil {
				return err
			}
			entries := make([]statusEntry, 0, len(v.Members))
			for _, m := range v.Members {
				entries = append(entries, statusEntry{Name: m.Name, State: m.State, Up: m.Up, LoadBytes: m.LoadBytes,
					Ownership: m.Ownership, Tokens: m.Tokens, DC: m.DC, Rack: m.Rack, StreamAddr: m.StreamAddr,
					Identity: m.Identity, IdentityError: m.IdentityError})
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), entries)
			}
			return printStatus(cmd.OutOrStdout(), v, entries)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the members as JSON")
	return cmd
}

var stateLetters = map[string]string{"NORMAL": "N", "JOINING": "J", "LEAVING": "L", "MOVING": "M", "LEFT": "X", "": "?"}

func printStatus(w io.Writer, v adminapi.RingView, entries []statusEntry) error {
	p := printable.String // names, addresses and racks are what members announced
	if v.Error != "" {
		fmt.Fprintf(w, "warning: %s\n", p(v.Error))
	}
	basis := v.OwnershipKeyspace
	if basis == "" {
		basis = "SimpleStrategy RF 1"
	}
	byDC := map[string][]statusEntry{}
	var dcs []string
	for _, e := range entries {
		if _, ok := byDC[e.DC]; !ok {
			dcs = append(dcs, e.DC)
		}
		byDC[e.DC] = append(byDC[e.DC], e)
	}
	for i, dc := range dcs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Datacenter: %s\nStatus=Up/Down, State=Normal/Joining/Leaving/Moving/left(X)\n", p(dc))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "--\tName\tAddress\tLoad\tTokens\tOwns (%s)\tRack\n", basis)
		for _, e := range byDC[dc] {
			ud := "D"
			if e.Up {
				ud = "U"
			}
			load := "?"
			if e.LoadBytes >= 0 {
				load = formatBytes(e.LoadBytes)
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%d\t%.1f%%\t%s\n", ud, stateLetters[e.State], p(e.Name), p(e.StreamAddr), load,
				e.Tokens, 100*e.Ownership, p(e.Rack))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if e.Identity != "" && e.Identity != "proven" {
			fmt.Fprintf(w, "identity of %s %s: it owns nothing", p(e.Name), e.Identity)
			if e.IdentityError != "" {
				fmt.Fprintf(w, " (%s)", p(e.IdentityError))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}
