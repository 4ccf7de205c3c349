package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/lib/tlsx"
)

func newCertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Create the cluster CA and node certificates for mutual TLS",
		Long: `Nodes stream to each other over QUIC with mutual TLS: each presents a certificate signed by
the cluster CA and refuses peers without one. Create the CA once, on an admin machine:

  sluice cert ca --dir certs

then one certificate per node, naming the hosts peers dial it by:

  sluice cert node --dir certs --name node1 --host 10.0.0.1 --host node1.example.com

Copy certs/ca.crt, certs/node1.crt and certs/node1.key to node1. Keep certs/ca.key off the
nodes: whoever holds it can join the cluster.

Operators and applications that only fetch get a client certificate:

  sluice cert client --dir certs --name etl

A client certificate may fetch only the keyspaces a node's client_fetch_keyspaces lists; it
cannot serve, call other nodes' operations or own tokens.`,
		Args: noArgs,
		// Runnable so that a missing or unknown subcommand is a usage error (exit 2) rather
		// than cobra's help with exit 0.
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("%s: want a subcommand: ca, node or client", cmd.CommandPath())
		},
	}
	cmd.AddCommand(newCertCACmd(), newCertNodeCmd(), newCertClientCmd())
	return cmd
}

func newCertCACmd() *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "ca --dir DIR [--force]",
		Short: "Create the cluster CA: DIR/ca.crt and DIR/ca.key",
		Long: fmt.Sprintf(`Create a self-signed ECDSA P-256 certificate authority valid for %d years as DIR/ca.crt
and DIR/ca.key (mode 0600), creating DIR if needed. Existing files are kept unless --force is
given; replacing the CA invalidates every node certificate it signed. Prints the two paths.`, tlsx.CAValidityYears),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("cert ca: --dir is required")
			}
			if err := tlsx.WriteCA(dir, force); err != nil {
				return certError(err)
			}
			crt, key := filepath.Join(dir, tlsx.CACertFile), filepath.Join(dir, tlsx.CAKeyFile)
			logger.Info().Str("cert", crt).Str("key", key).Msg("cluster CA written")
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", crt, key)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster certificate directory")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing CA")
	return cmd
}

func newCertNodeCmd() *cobra.Command {
	var dir, name string
	var hosts []string
	var force bool
	cmd := &cobra.Command{
		Use:   "node --dir DIR --name NAME [--host H ...] [--force]",
		Short: "Issue a node certificate signed by the cluster CA: DIR/NAME.crt and DIR/NAME.key",
		Long: fmt.Sprintf(`Issue node NAME's ECDSA P-256 certificate and key (mode 0600), signed by DIR/ca.crt and
DIR/ca.key, valid for %d years (never beyond the CA) for both accepting and dialing peers.
NAME is 1 to 253 characters of [A-Za-z0-9._-] ('.' only between other characters, not "ca");
it is the certificate's CommonName and a DNS name in it. Each --host (repeatable or
comma-separated) adds an IP address or DNS name peers may dial the node by; without --host the
certificate names 127.0.0.1 and ::1. Existing files are kept unless --force is given. Prints
the two paths.`, tlsx.NodeValidityYears),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" || name == "" {
				return usagef("cert node: --dir and --name are required")
			}
			if err := tlsx.WriteNode(dir, name, hosts, force); err != nil {
				return certError(err)
			}
			crt, key := tlsx.Files(dir, name)
			logger.Info().Str("cert", crt).Str("key", key).Strs("hosts", hosts).Msg("node certificate written")
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", crt, key)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster certificate directory holding ca.crt and ca.key")
	cmd.Flags().StringVar(&name, "name", "", "node name")
	cmd.Flags().StringSliceVar(&hosts, "host", nil, "IP address or DNS name of the node (repeatable)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing certificate and key")
	return cmd
}

func newCertClientCmd() *cobra.Command {
	var dir, name string
	var force bool
	cmd := &cobra.Command{
		Use:   "client --dir DIR --name NAME [--force]",
		Short: "Issue a client certificate signed by the cluster CA: DIR/NAME.crt and DIR/NAME.key",
		Long: fmt.Sprintf(`Issue client NAME's ECDSA P-256 certificate and key (mode 0600), signed by DIR/ca.crt and
DIR/ca.key, valid for %d years (never beyond the CA), for dialing nodes only (client
authentication). Nodes let it fetch the keyspaces their client_fetch_keyspaces lists and
nothing else: no serving, no peer operations, no tokens. NAME follows the rules of
`+"`sluice cert node`"+`. Existing files are kept unless --force is given. Prints the two paths.`, tlsx.NodeValidityYears),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" || name == "" {
				return usagef("cert client: --dir and --name are required")
			}
			if err := tlsx.WriteClient(dir, name, force); err != nil {
				return certError(err)
			}
			crt, key := tlsx.Files(dir, name)
			logger.Info().Str("cert", crt).Str("key", key).Msg("client certificate written")
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n", crt, key)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster certificate directory holding ca.crt and ca.key")
	cmd.Flags().StringVar(&name, "name", "", "client name")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing certificate and key")
	return cmd
}

// certError makes a bad name or host a usage error (exit 2) and says how to replace files.
func certError(err error) error {
	switch {
	case errors.Is(err, tlsx.ErrInvalidName), errors.Is(err, tlsx.ErrInvalidHost):
		return usageError{err}
	case errors.Is(err, tlsx.ErrExists):
		return fmt.Errorf("%w (pass --force to replace it)", err)
	}
	return err
}
