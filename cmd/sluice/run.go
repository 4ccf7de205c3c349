package main

import (
	"errors"
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
}

func newRunCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run [--config sluice.yaml] [flags]",
		Short: "Run the sluice node: the stream server and the admin API",
		Long: `Run the sluice node until SIGINT or SIGTERM: it creates missing data directories, removes
what interrupted installs left in every table directory, serves sstables to peers on
stream_addr and the admin API (GET /v1/status, GET /v1/streams, POST /v1/throughput,
GET /metrics) on admin_addr.

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
	} {
		if fs.Changed(o.flag) {
			*o.dst = o.val
		}
	}
	if fs.Changed("data-dir") {
		cfg.DataDirs = append([]string(nil), rf.dataDirs...)
	}
	return cfg, nil
}
