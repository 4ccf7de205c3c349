package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// StateFile is the name, under a cluster's directory, of the file naming its running
// processes (sluice testcluster up writes it, down and status read it).
const StateFile = "testcluster.json"

// State describes a running cluster of node processes.
type State struct {
	Dir   string      `json:"dir"`
	Nodes []NodeState `json:"nodes"`
}

// NodeState is one node of a State.
type NodeState struct {
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	AdminAddr  string `json:"admin_addr"`
	StreamAddr string `json:"stream_addr"`
	GossipAddr string `json:"gossip_addr"`
	DataDir    string `json:"data_dir"`
	Log        string `json:"log"`
}

// State describes the cluster's running nodes.
func (c *Cluster) State() State {
	st := State{Dir: c.dir}
	for _, name := range c.Names() {
		n := c.MustNode(name)
		if !n.Running() {
			continue
		}
		st.Nodes = append(st.Nodes, NodeState{Name: name, PID: n.PID(), AdminAddr: n.AdminAddr(), StreamAddr: n.StreamAddr(),
			GossipAddr: n.GossipAddr(), DataDir: n.DataDir(), Log: n.LogPath()})
	}
	return st
}

// SaveState writes the state file into the cluster's directory.
func (c *Cluster) SaveState() error {
	b, err := json.MarshalIndent(c.State(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, StateFile), append(b, '\n'), 0o644)
}

// LoadState reads dir's state file.
func LoadState(dir string) (State, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("%s: %w", filepath.Join(dir, StateFile), err)
	}
	return st, nil
}

// Alive reports whether the process pid exists.
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// StopState sends SIGTERM to every node process of st, waits up to 15s for them to exit,
// kills what is left, and removes the state file.
func StopState(ctx context.Context, st State) error {
	for _, n := range st.Nodes {
		if Alive(n.PID) {
			syscall.Kill(n.PID, syscall.SIGTERM)
		}
	}
	err := waitFor(ctx, 15*time.Second, "node processes to exit", func() (bool, error) {
		for _, n := range st.Nodes {
			if Alive(n.PID) && !zombie(n.PID) {
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, ErrTimeout) {
		for _, n := range st.Nodes {
			if Alive(n.PID) {
				syscall.Kill(n.PID, syscall.SIGKILL)
			}
		}
		err = nil
	}
	if err != nil {
		return err
	}
	// A --net netns cluster's namespaces and bridge outlive `up`; with the nodes gone they go.
	CleanNetworkNamespaces()
	if rerr := os.Remove(filepath.Join(st.Dir, StateFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return rerr
	}
	return nil
}

// zombie reports whether pid has exited but not been reaped (its parent, sluice testcluster
// up, is gone and init will reap it).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] == 'Z'
		}
	}
	return false
}
