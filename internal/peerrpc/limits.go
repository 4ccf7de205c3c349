package peerrpc

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/sstable/token"
)

// Methods of the peer protocol. internal/node answers them; DefaultMethods bounds them.
const (
	MethodIdentity      = "identity"       // → the callee's name: a member's proof of identity
	MethodLoad          = "load"           // → the callee's data size
	MethodTables        = "tables"         // a keyspace → its tables on the callee
	MethodRing          = "ring"           // → the callee's ring view
	MethodFetch         = "fetch"          // a fetch a member's operation asks the callee to run
	MethodRepairTree    = "repair_tree"    // Merkle trees of ranges at one depth
	MethodRepairDigests = "repair_digests" // one page of partition digests of ranges
	MethodCassandraLoad = "cassandra_load" // a sidecar's load: fetch it from the caller and import it
)

// Bounds of the repair calls. The server checks them before it dispatches (CheckTree,
// CheckDigests); a client cuts its requests to fit them (internal/node batches a repair's
// ranges by them), so sluice's own repair never meets them.
const (
	// MaxCallRanges bounds the ranges of one repair_tree or repair_digests call; the ranges
	// must also be normalized (sorted, disjoint, none wrapping but to the end of the ring),
	// so N copies of one range amplify nothing.
	MaxCallRanges = 1024
	// MaxTreeDepth bounds a repair_tree call's depth: 2^15 leaves a tree.
	MaxTreeDepth = repair.MaxDepth
	// MaxTreeLeaves bounds one repair_tree call's leaves, the sum over its ranges of
	// 2^depth: 16 trees of the greatest depth, an answer of about 11 MiB.
	MaxTreeLeaves = 1 << 19
	// TreeWorkPerLeaf is what a repair_tree call holds per leaf while it builds and answers:
	// the leaf (16 bytes) and its base64 in the answer (21⅓ bytes), with room to spare.
	TreeWorkPerLeaf = 48
	// treeWorkPerTree is a tree's own cost besides its leaves: its builder, range and
	// envelope.
	treeWorkPerTree = 1 << 10
	// digestWork is what a repair_digests call holds per digest of its page besides the
	// page's bytes: the Digest and its copies' slice, twice over while the page's slice grows.
	digestWork = 160
)

// Default budgets of heavy calls (Limits.HeavyPerPeer, Limits.MemoryBudget).
const (
	// DefaultHeavyPerPeer heavy calls of one caller (by certificate name) run at once: a
	// repair runs one at a time, so two leave room for one more operation and no more.
	DefaultHeavyPerPeer = 2
	// DefaultMemoryBudget is what the heavy calls of all callers reserve together: ten
	// repair_tree calls at their bounds.
	DefaultMemoryBudget = 256 << 20
	// lightBody bounds the body of calls that take no ranges.
	lightBody = 1 << 10
)

// Cost is what a call's request predicts before it runs: the bytes of its answer, and the
// bytes it holds while it runs and answers (what a heavy call reserves from the memory
// budget).
type Cost struct {
	Answer, Work int64
}

// Method is one row of the limits table.
type Method struct {
	Name string
	// MaxBody bounds the request body in bytes (the whole frame is bounded by MaxRequest).
	MaxBody int
	// MaxAnswer bounds the answer body in bytes: a call whose predicted answer is larger is
	// refused before it runs, and an answer that turns out larger is replaced by a CodeFailed
	// error. A client reads no more than this (and room for an error).
	MaxAnswer int
	// Heavy calls take one of their caller's HeavyPerPeer slots and reserve Cost.Work from the
	// MemoryBudget until their answer is written; when either is exhausted the call is refused
	// at once with CodeBusy.
	Heavy bool
	// Check, when set, reads the body far enough to hold it to the method's bounds and
	// predicts the call's cost; its error (naming the bound) refuses the call with
	// CodeBadRequest. It must not allocate more than a small multiple of the body.
	Check func(body []byte) (Cost, error)
}

// DefaultMethods is the table of the peer protocol (see the package documentation).
func DefaultMethods() []Method {
	return []Method{
		{Name: MethodIdentity, MaxBody: lightBody, MaxAnswer: 4 << 10},
		{Name: MethodLoad, MaxBody: lightBody, MaxAnswer: 4 << 10},
		{Name: MethodTables, MaxBody: lightBody, MaxAnswer: 4 << 20},
		{Name: MethodRing, MaxBody: lightBody, MaxAnswer: 16 << 20},
		{Name: MethodFetch, MaxBody: MaxRequest, MaxAnswer: 8 << 20},
		{Name: MethodRepairTree, MaxBody: MaxRequest, MaxAnswer: 12 << 20, Heavy: true, Check: CheckTree},
		{Name: MethodRepairDigests, MaxBody: MaxRequest, MaxAnswer: 12 << 20, Heavy: true, Check: CheckDigests},
		{Name: MethodCassandraLoad, MaxBody: MaxRequest, MaxAnswer: 8 << 20},
	}
}

// Limits is the table a server consults before it dispatches a call, and that a client obeys:
// the methods a node answers with their bounds, and the budgets heavy calls share. The zero
// value is DefaultMethods with the default budgets.
type Limits struct {
	// Methods, nil for DefaultMethods(). A method not listed is refused with CodeUnknown.
	Methods []Method
	// HeavyPerPeer bounds the heavy calls one caller (by certificate name) runs at once;
	// default DefaultHeavyPerPeer.
	HeavyPerPeer int
	// MemoryBudget is the bytes the heavy calls of all callers reserve together; default
	// DefaultMemoryBudget.
	MemoryBudget int64
}

// Lookup finds a method in the table of l (the default table when l is nil).
func (l *Limits) Lookup(name string) (Method, bool) {
	ms := DefaultMethods()
	if l != nil && l.Methods != nil {
		ms = l.Methods
	}
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
}

func (l *Limits) heavyPerPeer() int {
	if l == nil || l.HeavyPerPeer <= 0 {
		return DefaultHeavyPerPeer
	}
	return l.HeavyPerPeer
}

func (l *Limits) memoryBudget() int64 {
	if l == nil || l.MemoryBudget <= 0 {
		return DefaultMemoryBudget
	}
	return l.MemoryBudget
}

// Reason classifies a call refused by the limits, for logs and metrics.
type Reason string

const (
	ReasonUnknown Reason = "unknown_method" // not in the table (CodeUnknown)
	ReasonBody    Reason = "body"           // the body exceeds MaxBody (CodeBadRequest)
	ReasonBounds  Reason = "bounds"         // Check refused it, or its cost exceeds MaxAnswer or the whole budget (CodeBadRequest)
	ReasonPeer    Reason = "peer_busy"      // its caller runs HeavyPerPeer heavy calls (CodeBusy)
	ReasonMemory  Reason = "memory_busy"    // the memory budget cannot hold its work now (CodeBusy)
	ReasonAnswer  Reason = "answer"         // it ran, and its answer exceeded MaxAnswer (CodeFailed)
)

// Reasons lists every Reason, for metrics that show zeros rather than missing series.
func Reasons() []Reason {
	return []Reason{ReasonUnknown, ReasonBody, ReasonBounds, ReasonPeer, ReasonMemory, ReasonAnswer}
}

// gate is a server's state of its limits: the heavy calls in flight per caller and the memory
// budget. It does no I/O.
type gate struct {
	lim    *Limits
	heavy  *Slots
	budget *Budget
}

func newGate(l *Limits) *gate {
	return &gate{lim: l, heavy: NewSlots(l.heavyPerPeer()), budget: NewBudget(l.memoryBudget())}
}

// admit holds one call to the table before it is dispatched: the method is known, its body
// within MaxBody and its Check, its predicted answer within MaxAnswer and, for a heavy call, a
// slot of its caller and its work in the budget are taken. On success release gives them back
// and must be called once, when the answer is written; on refusal err says which bound, and
// reason classifies it.
func (g *gate) admit(caller, method string, body []byte) (m Method, release func(), reason Reason, err *Error) {
	m, ok := g.lim.Lookup(method)
	if !ok {
		return m, nil, ReasonUnknown, Errorf(CodeUnknown, "no peer method %q", method)
	}
	if len(body) > m.MaxBody {
		return m, nil, ReasonBody, Errorf(CodeBadRequest, "%s: body of %d bytes exceeds its MaxBody of %d", method, len(body), m.MaxBody)
	}
	var cost Cost
	if m.Check != nil {
		c, cerr := m.Check(body)
		if cerr != nil {
			return m, nil, ReasonBounds, Errorf(CodeBadRequest, "%s: %v", method, cerr)
		}
		cost = c
	}
	if cost.Answer > int64(m.MaxAnswer) {
		return m, nil, ReasonBounds, Errorf(CodeBadRequest, "%s: predicted answer of %d bytes exceeds its MaxAnswer of %d", method, cost.Answer, m.MaxAnswer)
	}
	if !m.Heavy {
		return m, func() {}, "", nil
	}
	if cost.Work > g.budget.Limit() {
		return m, nil, ReasonBounds, Errorf(CodeBadRequest, "%s: needs %d bytes of work, more than the whole MemoryBudget of %d", method, cost.Work, g.budget.Limit())
	}
	if !g.heavy.Take(caller) {
		return m, nil, ReasonPeer, Errorf(CodeBusy, "%s: %s already runs %d heavy calls (HeavyPerPeer); retry later", method, caller, g.lim.heavyPerPeer())
	}
	if !g.budget.Reserve(cost.Work) {
		g.heavy.Give(caller)
		return m, nil, ReasonMemory, Errorf(CodeBusy, "%s: needs %d bytes of work and %d of the MemoryBudget of %d are reserved; retry later",
			method, cost.Work, g.budget.Used(), g.budget.Limit())
	}
	return m, func() { g.budget.Release(cost.Work); g.heavy.Give(caller) }, "", nil
}

// treeBody and digestBody are the fields of the repair calls' bodies (node.TreeRequest,
// node.DigestRequest) the checks read; the handler decodes the rest, strictly.
type treeBody struct {
	Ranges string `json:"ranges"`
	Depth  int    `json:"depth"`
}

type digestBody struct {
	Ranges string `json:"ranges"`
	Limit  int    `json:"limit"`
}

// CheckTree holds a repair_tree body to MaxTreeDepth, MaxCallRanges, MaxTreeLeaves and
// normalized ranges, in that order and before the ranges are parsed, and predicts its cost
// (TreeCost).
func CheckTree(body []byte) (Cost, error) {
	var b treeBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Cost{}, err
	}
	if b.Depth < 0 || b.Depth > MaxTreeDepth {
		return Cost{}, fmt.Errorf("depth %d outside [0, MaxTreeDepth %d]", b.Depth, MaxTreeDepth)
	}
	n, err := countRanges(b.Ranges)
	if err != nil {
		return Cost{}, err
	}
	if leaves := n << b.Depth; leaves > MaxTreeLeaves {
		return Cost{}, fmt.Errorf("%d ranges at depth %d make %d leaves, over MaxTreeLeaves (%d)", n, b.Depth, leaves, MaxTreeLeaves)
	}
	rs, err := ParseNormalized(b.Ranges)
	if err != nil {
		return Cost{}, err
	}
	return TreeCost(len(rs), b.Depth), nil
}

// TreeCost is the cost of a repair_tree call of n ranges at depth: each tree's JSON
// (repair.TreeWireSize) in the answer; its leaves and their answer as work.
func TreeCost(n, depth int) Cost {
	answer := int64(n)*int64(repair.TreeWireSize(depth)+1) + 16
	return Cost{Answer: answer, Work: int64(n)<<depth*TreeWorkPerLeaf + int64(n)*treeWorkPerTree}
}

// CheckDigests holds a repair_digests body to MaxCallRanges and normalized ranges and predicts
// its cost (DigestCost).
func CheckDigests(body []byte) (Cost, error) {
	var b digestBody
	if err := json.Unmarshal(body, &b); err != nil {
		return Cost{}, err
	}
	if _, err := countRanges(b.Ranges); err != nil {
		return Cost{}, err
	}
	if _, err := ParseNormalized(b.Ranges); err != nil {
		return Cost{}, err
	}
	return DigestCost(b.Limit), nil
}

// DigestCost is the cost of a repair_digests call asking for a page of limit digests
// (repair.MaxDigestsPerPage when not positive or larger): the page's base64 in the answer;
// the digests, the page and the answer as work.
func DigestCost(limit int) Cost {
	if limit <= 0 || limit > repair.MaxDigestsPerPage {
		limit = repair.MaxDigestsPerPage
	}
	page := int64(repair.DigestPageSize(limit))
	answer := int64(base64.StdEncoding.EncodedLen(int(page))) + 64
	return Cost{Answer: answer, Work: int64(limit)*digestWork + 2*page + answer}
}

// countRanges counts the ranges of a range list by their opening parentheses, refusing more
// than MaxCallRanges before anything is parsed.
func countRanges(s string) (int, error) {
	n := strings.Count(s, "(")
	if n > MaxCallRanges {
		return n, fmt.Errorf("%d ranges, over MaxCallRanges (%d)", n, MaxCallRanges)
	}
	return n, nil
}

// ParseNormalized parses a list of Murmur3 ranges and checks that it is normalized, as a
// repair's ranges are (ring.Normalize, repair.Intersect): each range non-empty and wrapping at
// most to the end of the ring ((l, MinToken]; the whole ring is (MinToken, MinToken]), and each
// starting at or after the end of the one before, so no token is asked for twice.
func ParseNormalized(s string) (token.RangeSet, error) {
	rs, err := token.ParseRanges(token.Murmur3, s)
	if err != nil {
		return nil, err
	}
	var end uint64
	for i, r := range rs {
		l, rt := span(r)
		if l >= rt {
			return nil, fmt.Errorf("range %d %v is empty or wraps: ranges must be normalized", i, r)
		}
		if i > 0 && l < end {
			return nil, fmt.Errorf("range %d %v overlaps or precedes range %d %v: ranges must be sorted and disjoint", i, r, i-1, rs[i-1])
		}
		end = rt
	}
	return rs, nil
}

// span maps a Murmur3 range to (l, r] over the tokens shifted to unsigned order (t + 2^63),
// the end of the ring (a right end of MinToken) becoming MaxUint64.
func span(r token.Range) (l, rt uint64) {
	l = uint64(r.Left.Long) ^ 1<<63
	if r.Right.Long == math.MinInt64 {
		return l, math.MaxUint64
	}
	return l, uint64(r.Right.Long) ^ 1<<63
}
