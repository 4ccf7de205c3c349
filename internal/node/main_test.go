package node

import (
	"os"
	"testing"
)

// TestMain keeps the admin token files the nodes of these tests create (under the user's
// configuration directory by default) in a directory of their own.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-node-test-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
