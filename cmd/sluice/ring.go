package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
)

func newRingCmd() *cobra.Command {
	var admin string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ring [--admin HOST:PORT] [--json]",
		Short: "Show the token ring as a node sees it",
		Long: `Show every token of the ring in order with its node, like nodetool ring: token, node,
status (Up/Down), state, DC and rack. --json prints a list of {token, node, state, up, dc, rack}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var v adminapi.RingView
			if err := adminGet(cmd.Context(), admin, "/v1/ring?load=false", &v); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v.Tokens)
			}
			return printRing(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the node")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tokens as JSON")
	return cmd
}

func printRing(w io.Writer, v adminapi.RingView) error {
	if v.Error != "" {
		fmt.Fprintf(w, "warning: %s\n", v.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Token\tNode\tStatus\tState\tDC\tRack")
	for _, t := range v.Tokens {
		status := "Down"
		if t.Up {
			status = "Up"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.Token, t.Node, status, t.State, t.DC, t.Rack)
	}
	return tw.Flush()
}
