package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
)

// adminClient talks to a node's admin HTTP API with the node's admin token (read from the
// node's token file on this host, or $SLUICE_ADMIN_TOKEN_FILE).
type adminClient struct {
	addr string // as the user gave it, for messages
	ac   *adminapi.Client
}

// newAdminClient accepts HOST:PORT or an http(s):// base URL.
func newAdminClient(addr string) (*adminClient, error) {
	base := addr
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		u, err := url.Parse(addr)
		if err != nil || u.Host == "" {
			return nil, usagef("--admin %q: want HOST:PORT", addr)
		}
		base = strings.TrimSuffix(addr, "/")
	} else {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, usagef("--admin %q: want HOST:PORT", addr)
		}
		base = "http://" + addr
	}
	ac := adminapi.NewClient(strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://"), "", &http.Client{Timeout: 10 * time.Second})
	ac.Base = base
	return &adminClient{addr: addr, ac: ac}, nil
}

// call sends a request with an optional JSON body and decodes the JSON answer into out. Errors
// name the admin address.
func (c *adminClient) call(ctx context.Context, method, path string, body, out any) error {
	err := c.ac.Call(ctx, method, path, body, out)
	var ae *adminapi.StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return fmt.Errorf("admin endpoint %s: %s %s: %d %s: %s", c.addr, method, path, ae.Status, http.StatusText(ae.Status), ae.Msg)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// A transport failure: the URL is in the message already, as the address.
		return fmt.Errorf("admin endpoint %s unreachable (is `sluice run` running there?): %w", c.addr, ue.Err)
	}
	return fmt.Errorf("admin endpoint %s: %w", c.addr, err)
}

func newSetStreamThroughputCmd() *cobra.Command {
	var admin, outbound, inbound string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "setstreamthroughput [--admin HOST:PORT] [--outbound RATE] [--inbound RATE] [--json]",
		Short: "Set a running node's streaming rate limits",
		Long: `Set the node-wide streaming rate limits of a running node, like nodetool
setstreamthroughput, through its admin API. RATE is bytes per second with an optional KiB, MiB,
GiB or TiB suffix (and an optional "/s"), e.g. 100MiB; 0 means unlimited. A direction left out
keeps its limit. The limits last until the node restarts; put them in the configuration file to
keep them. Without --outbound and --inbound it prints the limits in force; --json prints
them (after a change, the new ones) as {"outbound_bytes_per_second": N, "inbound_bytes_per_second": N}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newAdminClient(admin)
			if err != nil {
				return err
			}
			var req adminapi.ThroughputRequest
			for _, f := range []struct {
				name, val string
				dst       **int64
			}{{"outbound", outbound, &req.OutboundBytesPerSecond}, {"inbound", inbound, &req.InboundBytesPerSecond}} {
				if !cmd.Flags().Changed(f.name) {
					continue
				}
				n, err := parseSize(strings.TrimSuffix(strings.TrimSpace(f.val), "/s"))
				if err != nil {
					return usagef("setstreamthroughput: --%s %q: want a rate such as 100MiB (0 = unlimited)", f.name, f.val)
				}
				*f.dst = &n
			}
			var now adminapi.Throughput
			if req.OutboundBytesPerSecond == nil && req.InboundBytesPerSecond == nil {
				err = c.call(cmd.Context(), http.MethodGet, "/v1/throughput", nil, &now)
			} else {
				err = c.call(cmd.Context(), http.MethodPost, "/v1/throughput", req, &now)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), now)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stream throughput: outbound %s, inbound %s\n",
				formatLimit(now.OutboundBytesPerSecond), formatLimit(now.InboundBytesPerSecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&admin, "admin", node.DefaultAdminAddr, "admin API address of the node")
	f.StringVar(&outbound, "outbound", "", "outbound limit in bytes per second, e.g. 100MiB (0 = unlimited)")
	f.StringVar(&inbound, "inbound", "", "inbound limit in bytes per second, e.g. 100MiB (0 = unlimited)")
	f.BoolVar(&asJSON, "json", false, "print the limits as JSON")
	return cmd
}

// formatLimit prints a rate limit, 0 being unlimited.
func formatLimit(n int64) string {
	if n == 0 {
		return "unlimited"
	}
	return formatBytes(n) + "/s"
}

// formatBytes prints a byte count in binary units with one decimal: "512 B", "1.5 KiB".
func formatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n) / 1024
	i := 0
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
