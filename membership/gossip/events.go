package gossip

import (
	"container/list"
	"fmt"
	"sync"
)

// EventKind says what happened to a member.
type EventKind uint8

const (
	// Join: a node became alive: it joined, or came back after Dead or Leave. The local node's
	// own Join is the first event.
	Join EventKind = iota + 1
	// Leave: a node left gracefully.
	Leave
	// Update: a node's metadata or token set changed.
	Update
	// Dead: failure detection declared a node dead.
	Dead
)

var eventNames = [...]string{Join: "join", Leave: "leave", Update: "update", Dead: "dead"}

func (k EventKind) String() string {
	if k >= Join && k <= Dead {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one membership change and a snapshot of the member after it.
type Event struct {
	Kind   EventKind
	Member Member
}

// eventQueue sits between memberlist's callbacks, which must never block, and the Events
// channel, which a slow consumer may leave full. push never blocks.
//
// Join, Leave and Dead events are never dropped: they are kept in an unbounded list, which
// cannot grow faster than nodes join and fail. Update events are coalesced instead: while an
// Update for a member is still queued and no Join/Leave/Dead for that member follows it, a
// newer Update replaces its snapshot in place (the consumer sees the latest state, in the
// original position), and the coalesced counter counts the replaced ones. So at most one
// Update per member is queued, which bounds the Updates a stalled consumer can cost, and no
// reordering across Join/Leave/Dead occurs. Dropping the oldest Update instead would lose the
// position of a change; coalescing keeps it and loses only intermediate states, which a
// consumer rebuilding a ring from the latest state never needs.
type eventQueue struct {
	mu        sync.Mutex
	l         list.List                // of Event
	update    map[string]*list.Element // the queued, still coalescible Update per member
	coalesced uint64
	wake      chan struct{} // capacity 1: signals that the list became non-empty
}

func newEventQueue() *eventQueue {
	return &eventQueue{update: make(map[string]*list.Element), wake: make(chan struct{}, 1)}
}

// push queues ev; it never blocks.
func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	name := ev.Member.Name
	if e, ok := q.update[name]; ok && ev.Kind == Update {
		e.Value = ev
		q.coalesced++
		q.mu.Unlock()
		return
	}
	e := q.l.PushBack(ev)
	if ev.Kind == Update {
		q.update[name] = e
	} else {
		delete(q.update, name)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop removes and returns the oldest event.
func (q *eventQueue) pop() (Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.l.Front()
	if e == nil {
		return Event{}, false
	}
	ev := q.l.Remove(e).(Event)
	if q.update[ev.Member.Name] == e {
		delete(q.update, ev.Member.Name)
	}
	return ev, true
}

// stats returns the number of queued events and of coalesced updates so far.
func (q *eventQueue) stats() (queued int, coalesced uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.l.Len(), q.coalesced
}
