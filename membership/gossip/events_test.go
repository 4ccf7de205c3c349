package gossip

import (
	"fmt"
	"testing"
)

func ev(kind EventKind, name string, version uint64) Event {
	return Event{Kind: kind, Member: Member{Name: name, Meta: NodeMeta{TokensVersion: version}}}
}

func drainQueue(q *eventQueue) []string {
	var out []string
	for {
		e, ok := q.pop()
		if !ok {
			return out
		}
		out = append(out, fmt.Sprintf("%v %s v%d", e.Kind, e.Member.Name, e.Member.Meta.TokensVersion))
	}
}

func TestEventQueueNeverDropsJoinLeaveDead(t *testing.T) {
	q := newEventQueue()
	const n = 10000
	for i := range n {
		q.push(ev(Join, fmt.Sprint(i), 0))
		q.push(ev(Dead, fmt.Sprint(i), 0))
	}
	if got := len(drainQueue(q)); got != 2*n {
		t.Fatalf("%d events, want %d", got, 2*n)
	}
}

func TestEventQueueCoalescesUpdatesInPlace(t *testing.T) {
	q := newEventQueue()
	q.push(ev(Join, "a", 0))
	q.push(ev(Update, "a", 1))
	q.push(ev(Update, "b", 1))
	q.push(ev(Update, "a", 2)) // replaces "a v1", keeps its position before "b"
	q.push(ev(Update, "a", 3))
	got := fmt.Sprint(drainQueue(q))
	want := fmt.Sprint([]string{"join a v0", "update a v3", "update b v1"})
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, c := q.stats(); c != 2 {
		t.Fatalf("coalesced %d, want 2", c)
	}
}

func TestEventQueueDoesNotCoalesceAcrossJoinOrDead(t *testing.T) {
	q := newEventQueue()
	q.push(ev(Update, "a", 1))
	q.push(ev(Dead, "a", 1))
	q.push(ev(Join, "a", 1))
	q.push(ev(Update, "a", 2))
	got := fmt.Sprint(drainQueue(q))
	want := fmt.Sprint([]string{"update a v1", "dead a v1", "join a v1", "update a v2"})
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestEventQueueStopsCoalescingOnceDelivered(t *testing.T) {
	q := newEventQueue()
	q.push(ev(Update, "a", 1))
	if e, _ := q.pop(); e.Member.Meta.TokensVersion != 1 {
		t.Fatal("wrong event")
	}
	q.push(ev(Update, "a", 2))
	if got := drainQueue(q); len(got) != 1 || got[0] != "update a v2" {
		t.Fatalf("got %v", got)
	}
}
