package cassandra

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/token"
)

// HostState is a Cassandra node's liveness as the sidecar knows it.
type HostState string

const (
	// Up: the local node (it answered the ring read) or a peer the driver holds as up.
	Up HostState = "UP"
	// Down: a peer the driver holds as down (a DOWN event, or its connections failed).
	Down HostState = "DOWN"
	// Unknown: a peer the driver has not placed (not connected yet, or filtered).
	Unknown HostState = "UNKNOWN"
)

// Node is one Cassandra node of the ring, as system.local (the local node) or
// system.peers_v2 (system.peers before Cassandra 4.0) describe it.
type Node struct {
	HostID string // lower-case UUID with dashes; it names the node in the ring.Ring
	// Address is the node's broadcast address (system.local.broadcast_address,
	// system.peers_v2.peer): the one gossip and streaming know it by.
	Address string
	// ListenAddress is system.local.listen_address (the local node only).
	ListenAddress string
	// NativeAddress is where clients reach its CQL port (rpc_address / native_address),
	// NativePort the port when the table says it (0 otherwise).
	NativeAddress  string
	NativePort     int
	DC, Rack       string
	Tokens         []int64 // Murmur3, ascending
	State          HostState
	Local          bool // the node this sidecar sits beside
	ReleaseVersion string
}

// Keyspace is one row of system_schema.keyspaces.
type Keyspace struct {
	Name        string
	Replication map[string]string // as stored: class and options
}

// Table is one row of system_schema.tables.
type Table struct {
	Keyspace, Name string
	ID             string // 32 lower-case hex digits, as in the table's directory name
}

// Snapshot is one read of the ring: what the local node said at ReadAt.
type Snapshot struct {
	ClusterName string
	Partitioner string
	Nodes       []Node     // by host id
	Keyspaces   []Keyspace // by name
	Tables      []Table    // by keyspace, then name
	ReadAt      time.Time
}

// Murmur3Partitioner is the partitioner class sluice supports.
const Murmur3Partitioner = "org.apache.cassandra.dht.Murmur3Partitioner"

// LocalNode returns the local node of the snapshot.
func (s Snapshot) LocalNode() (Node, bool) {
	for _, n := range s.Nodes {
		if n.Local {
			return n, true
		}
	}
	return Node{}, false
}

// Node returns the node of host id (any case).
func (s Snapshot) Node(hostID string) (Node, bool) {
	for _, n := range s.Nodes {
		if strings.EqualFold(n.HostID, hostID) {
			return n, true
		}
	}
	return Node{}, false
}

// Keyspace returns the keyspace called name.
func (s Snapshot) Keyspace(name string) (Keyspace, bool) {
	for _, k := range s.Keyspaces {
		if k.Name == name {
			return k, true
		}
	}
	return Keyspace{}, false
}

// Table returns keyspace.table.
func (s Snapshot) Table(keyspace, table string) (Table, bool) {
	for _, t := range s.Tables {
		if t.Keyspace == keyspace && t.Name == table {
			return t, true
		}
	}
	return Table{}, false
}

// Ring converts the snapshot's nodes to a membership/ring Ring: one NORMAL member per node
// that holds tokens, named by its host id, with its DC and rack. Cassandra's system tables
// list only nodes that own tokens (a bootstrapping node appears in system.peers once it is
// NORMAL), so every member is NORMAL; liveness is not part of a Ring (Node.State says it).
// Nodes without tokens are left out and returned by name.
func (s Snapshot) Ring() (ring.Ring, []string, error) {
	if err := checkPartitioner(s.Partitioner); err != nil {
		return ring.Ring{}, nil, err
	}
	var ms []ring.Member
	var skipped []string
	for _, n := range s.Nodes {
		if len(n.Tokens) == 0 {
			skipped = append(skipped, n.HostID)
			continue
		}
		m := ring.Member{Node: ring.Node{Name: n.HostID, DC: n.DC, Rack: n.Rack}, State: ring.Normal,
			Tokens: make([]token.Token, len(n.Tokens))}
		for i, t := range n.Tokens {
			m.Tokens[i] = token.Token{Kind: token.KindMurmur3, Long: t}
		}
		ms = append(ms, m)
	}
	r, err := ring.NewRing(ms...)
	return r, skipped, err
}

// Strategy is the ring.Strategy of keyspace, from its replication map.
func (s Snapshot) Strategy(keyspace string) (ring.Strategy, error) {
	k, ok := s.Keyspace(keyspace)
	if !ok {
		return nil, fmt.Errorf("cassandra: no keyspace %q in system_schema.keyspaces", keyspace)
	}
	r, err := ParseReplication(k.Replication)
	if err != nil {
		return nil, fmt.Errorf("keyspace %s: %w", keyspace, err)
	}
	return r.Strategy()
}

func checkPartitioner(p string) error {
	if p != Murmur3Partitioner && p != "Murmur3Partitioner" {
		return fmt.Errorf("%w: %q (sluice supports %s)", ErrUnsupportedPartitioner, p, Murmur3Partitioner)
	}
	return nil
}

// Replication is a keyspace's replication in sluice's terms: SimpleStrategy with RF, or
// NetworkTopologyStrategy with a factor per DC.
type Replication struct {
	Class string // SimpleStrategy or NetworkTopologyStrategy, without the package
	RF    int    // SimpleStrategy's replication_factor
	DCs   map[string]int
}

// Replication classes sluice's ring implements.
const (
	SimpleStrategy          = "SimpleStrategy"
	NetworkTopologyStrategy = "NetworkTopologyStrategy"
)

const locatorPackage = "org.apache.cassandra.locator."

// ParseReplication reads a replication map as system_schema.keyspaces stores it:
// {class: org.apache.cassandra.locator.SimpleStrategy, replication_factor: "3"} or
// {class: ...NetworkTopologyStrategy, dc1: "3", dc2: "2"}. Transient replication ("3/1"),
// LocalStrategy (system, system_schema), EverywhereStrategy and other classes are
// ErrUnsupportedStrategy: no ring.Strategy describes them.
func ParseReplication(m map[string]string) (Replication, error) {
	class := strings.TrimPrefix(m["class"], locatorPackage)
	r := Replication{Class: class}
	factor := func(k, v string) (int, error) {
		if strings.Contains(v, "/") {
			return 0, fmt.Errorf("%w: %s %q: transient replicas", ErrUnsupportedStrategy, k, v)
		}
		f, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%w: %s %q: not a replication factor", ErrUnsupportedStrategy, k, v)
		}
		return f, nil
	}
	switch class {
	case SimpleStrategy:
		v, ok := m["replication_factor"]
		if !ok {
			return Replication{}, fmt.Errorf("%w: SimpleStrategy without replication_factor", ErrUnsupportedStrategy)
		}
		f, err := factor("replication_factor", v)
		if err != nil {
			return Replication{}, err
		}
		r.RF = f
		return r, nil
	case NetworkTopologyStrategy:
		r.DCs = map[string]int{}
		for k, v := range m {
			if k == "class" {
				continue
			}
			if k == "replication_factor" {
				// Cassandra expands it to every DC when the keyspace is created; a stored map
				// never keeps it.
				return Replication{}, fmt.Errorf("%w: NetworkTopologyStrategy with replication_factor", ErrUnsupportedStrategy)
			}
			f, err := factor(k, v)
			if err != nil {
				return Replication{}, err
			}
			r.DCs[k] = f
		}
		return r, nil
	case "":
		return Replication{}, fmt.Errorf("%w: no class", ErrUnsupportedStrategy)
	}
	return Replication{}, fmt.Errorf("%w: class %s", ErrUnsupportedStrategy, m["class"])
}

// Strategy is the ring.Strategy of r. A NetworkTopologyStrategy keyspace with no DC (or only
// zero factors) replicates nothing and still has a strategy.
func (r Replication) Strategy() (ring.Strategy, error) {
	switch r.Class {
	case SimpleStrategy:
		if r.RF < 1 {
			return nil, fmt.Errorf("%w: SimpleStrategy replication_factor %d", ErrUnsupportedStrategy, r.RF)
		}
		return ring.SimpleStrategy{RF: r.RF}, nil
	case NetworkTopologyStrategy:
		rf := make(map[string]int, len(r.DCs))
		for dc, f := range r.DCs {
			rf[dc] = f
		}
		return ring.NetworkTopologyStrategy{RF: rf}, nil
	}
	return nil, fmt.Errorf("%w: class %q", ErrUnsupportedStrategy, r.Class)
}

// String is the CQL form of the replication, DCs in order.
func (r Replication) String() string {
	if r.Class == SimpleStrategy {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", r.RF)
	}
	dcs := make([]string, 0, len(r.DCs))
	for dc := range r.DCs {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	var b strings.Builder
	fmt.Fprintf(&b, "{'class': '%s'", r.Class)
	for _, dc := range dcs {
		fmt.Fprintf(&b, ", '%s': %d", dc, r.DCs[dc])
	}
	b.WriteString("}")
	return b.String()
}

// ParseTokens reads the tokens column (a set of decimal Murmur3 tokens) into ascending
// int64s. The minimum token, which no node may hold, and duplicates are errors.
func ParseTokens(ts []string) ([]int64, error) {
	out := make([]int64, 0, len(ts))
	for _, s := range ts {
		t, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: not a Murmur3 token", ErrBadToken, s)
		}
		if t == math.MinInt64 {
			return nil, fmt.Errorf("%w: %d is the minimum token", ErrBadToken, t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("%w: %d listed twice", ErrBadToken, out[i])
		}
	}
	return out, nil
}

// sortSnapshot orders the snapshot's lists as Snapshot documents.
func sortSnapshot(s *Snapshot) {
	slices.SortFunc(s.Nodes, func(a, b Node) int { return cmp.Compare(a.HostID, b.HostID) })
	slices.SortFunc(s.Keyspaces, func(a, b Keyspace) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(s.Tables, func(a, b Table) int {
		return cmp.Or(cmp.Compare(a.Keyspace, b.Keyspace), cmp.Compare(a.Name, b.Name))
	})
}

// TableID normalises a UUID as CQL prints it (with dashes) to the 32 hex digits of a table
// directory name.
func TableID(uuid string) (string, error) {
	id := strings.ToLower(strings.ReplaceAll(uuid, "-", ""))
	if len(id) != 32 {
		return "", fmt.Errorf("cassandra: table id %q: want a UUID", uuid)
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", fmt.Errorf("cassandra: table id %q: want a UUID", uuid)
		}
	}
	return id, nil
}
