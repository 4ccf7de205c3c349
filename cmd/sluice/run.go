package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicedb/sluice/internal/node"
)

// runFlags are `sluice run`'s flags; each given one overrides the configuration file.
type runFlags struct {
	config, name, streamAddr, adminAddr, tlsDir string
	dataDirs                                    []string

	gossipAddr, dc, rack, clusterKeyFile, clusterLabel string
	seeds                                              []string
	initialTokens                                      []int64
	numTokens                                          int
	bootstrap                                          bool
}

func newRunCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run [--config sluice.yaml] [flags]",
		Short: "Run the sluice node: the stream server and the admin API",
		Long: `Run the sluice node until SIGINT or SIGTERM: it creates missing data directories, removes
what interrupted installs left in every table directory, serves sstables to peers on
stream_addr and the admin API (GET /v1/status, GET /v1/streams, POST /v1/throughput,
GET /metrics, and with membership GET /v1/ring and the /v1/ops operations) on admin_addr.
With --gossip-addr (gossip_addr) the node joins the cluster through gossip (--seeds,
--cluster-key-file), announces its tokens and serves sluice status, ring, decommission, move
and cleanup; with --bootstrap a new node first streams its ranges from their replicas.

The configuration file is YAML (see internal/node/testdata/sluice.example.yaml); flags
override it, and --data-dir, given at least once, replaces the file's data_dirs. Without
--config the flags are the whole configuration: --name, --data-dir and --tls-dir are required.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := runConfig(cmd.Flags(), rf)
			if err != nil {
				return err
			}
			n, err := node.New(node.Options{Config: cfg, Logger: logger, NewStreamServer: node.QUICStreamServer})
			if err != nil {
				var ce *node.ConfigError
				if errors.As(err, &ce) {
					return usageError{err}
				}
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return n.Run(ctx)
		},
	}
	addRunFlags(cmd.Flags(), &rf)
	return cmd
}

func addRunFlags(f *pflag.FlagSet, rf *runFlags) {
	f.StringVar(&rf.config, "config", "", "YAML configuration file")
	f.StringVar(&rf.name, "name", "", "node name (overrides name)")
	f.StringArrayVar(&rf.dataDirs, "data-dir", nil, "data directory, repeatable (replaces data_dirs)")
	f.StringVar(&rf.streamAddr, "stream-addr", "", "stream server address host:port (overrides stream_addr; default "+node.DefaultStreamAddr+")")
	f.StringVar(&rf.adminAddr, "admin-addr", "", "admin API address host:port (overrides admin_addr; default "+node.DefaultAdminAddr+")")
	f.StringVar(&rf.tlsDir, "tls-dir", "", "directory of ca.crt, NAME.crt and NAME.key (overrides tls_dir)")
	f.StringVar(&rf.gossipAddr, "gossip-addr", "", "gossip address host:port; turns membership on (overrides gossip_addr)")
	f.StringSliceVar(&rf.seeds, "seeds", nil, "gossip addresses of existing members, H:P,... (overrides seeds)")
	f.IntVar(&rf.numTokens, "num-tokens", 0, fmt.Sprintf("tokens to claim (overrides num_tokens; default %d)", node.DefaultNumTokens))
	f.Int64SliceVar(&rf.initialTokens, "initial-tokens", nil, "explicit tokens T,... (overrides initial_tokens)")
	f.BoolVar(&rf.bootstrap, "bootstrap", false, "a new node streams its ranges before it becomes NORMAL (overrides bootstrap)")
	f.StringVar(&rf.dc, "dc", "", "data centre (overrides dc; default "+node.DefaultDC+")")
	f.StringVar(&rf.rack, "rack", "", "rack (overrides rack; default "+node.DefaultRack+")")
	f.StringVar(&rf.clusterKeyFile, "cluster-key-file", "", "file of the 16, 24 or 32-byte gossip key, raw or hex (overrides cluster_key_file)")
	f.StringVar(&rf.clusterLabel, "cluster-label", "", "cluster label (overrides cluster_label; default "+node.DefaultClusterLabel+")")
}

// runConfig loads the configuration file, if any, and applies the flags that were given.
// A file that cannot be read or parsed is a usage error, like a bad flag.
func runConfig(fs *pflag.FlagSet, rf runFlags) (node.Config, error) {
	var cfg node.Config
	if rf.config != "" {
		c, err := node.LoadConfig(rf.config)
		if err != nil {
			return node.Config{}, usagef("--config: %v", err)
		}
		cfg = c
	}
	for _, o := range []struct {
		flag string
		dst  *string
		val  string
	}{
		{"name", &cfg.Name, rf.name},
		{"stream-addr", &cfg.StreamAddr, rf.streamAddr},
		{"admin-addr", &cfg.AdminAddr, rf.adminAddr},
		{"tls-dir", &cfg.TLSDir, rf.tlsDir},
		{"gossip-addr", &cfg.GossipAddr, rf.gossipAddr},
		{"dc", &cfg.DC, rf.dc},
		{"rack", &cfg.Rack, rf.rack},
		{"cluster-key-file", &cfg.ClusterKeyFile, rf.clusterKeyFile},
		{"cluster-label", &cfg.ClusterLabel, rf.clusterLabel},
	} {
		if fs.Changed(o.flag) {
			*o.dst = o.val
		}
	}
	if fs.Changed("data-dir") {
		cfg.DataDirs = append([]string(nil), rf.dataDirs...)
	}
	if fs.Changed("seeds") {
		cfg.Seeds = append([]string(nil), rf.seeds...)
	}
	if fs.Changed("initial-tokens") {
		cfg.InitialTokens = append([]int64(nil), rf.initialTokens...)
	}
	if fs.Changed("num-tokens") {
		cfg.NumTokens = rf.numTokens
	}
	if fs.Changed("bootstrap") {
		cfg.Bootstrap = rf.bootstrap
	}
	return cfg, nil
}
