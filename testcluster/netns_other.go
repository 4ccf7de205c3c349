//go:build !linux

package testcluster

import (
	"fmt"
	"os/exec"
)

// netns needs Linux network namespaces.
type netns struct{}

func newNetns() (*netns, error) {
	return nil, fmt.Errorf("%w: --net netns needs Linux network namespaces", ErrNeedsRoot)
}

func (n *netns) addNode(name string) (string, error)         { return "", nil }
func (n *netns) wrap(name string, cmd *exec.Cmd) *exec.Cmd   { return cmd }
func (n *netns) setLink(name string, up bool) error          { return nil }
func (n *netns) hostIP() string                              { return "" }
func (n *netns) setLoss(name string, fraction float64) error { return nil }

func nftAvailable() bool      { return false }
func (n *netns) close() error { return nil }

// CleanNetworkNamespaces has nothing to clean without Linux namespaces.
func CleanNetworkNamespaces() {}
