package ops

import (
	"github.com/rs/zerolog"
)

// Cluster is what an operation runs with: a ring, the members behind it, this node's data.
// Its operations run under a Tracker, which hands them their *Op.
type Cluster struct {
	Ring  Ring
	Own   OwnRing // sluice's own ring (Ring too); nil on Cassandra's, which no operation changes
	Peers Peers
	Local *Local
	// Install lands a stream plan's transfers; nil has the target fetch into its live table
	// directory (Peers.Fetch).
	Install Installer
	// Journal is the file recording which transfers of the current operation completed, so
	// that a retry skips them; "" keeps none.
	Journal string
	Log     zerolog.Logger
}

func (c *Cluster) installer() Installer {
	if c.Install != nil {
		return c.Install
	}
	return fetchInstall{c.Peers}
}
