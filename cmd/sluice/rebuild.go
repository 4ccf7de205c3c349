package main

import (
	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
)

func newRebuildCmd() *cobra.Command {
	var admin, keyspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rebuild [SOURCE_DC] [--keyspace KS] [--admin HOST:PORT]",
		Short: "Stream every range the node replicates from other replicas (a node of a new DC)",
		Long: `Rebuild the node, like nodetool rebuild: for every range it replicates it fetches the data
from one other live replica, in SOURCE_DC when given, spreading the ranges over the sources.
It is for a node that owns ranges without their data: the nodes of a DC added to a keyspace's
replication join NORMAL without bootstrapping, then each rebuilds from an existing DC. What the
node already holds is not looked at. A failed rebuild resumes when run again (completed
transfers are skipped).`,
		Args: atMostArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := adminapi.RebuildRequest{Keyspace: keyspace}
			if len(args) == 1 {
				req.SourceDC = args[0]
			}
			return runOp(cmd, admin, adminapi.OpRebuild, req, asJSON)
		},
	}
	cmd.Flags().StringVar(&keyspace, "keyspace", "", "rebuild only this keyspace")
	opFlags(cmd, &admin, &asJSON)
	return cmd
}
