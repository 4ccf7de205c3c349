package ops

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// WaitEnded holds its caller while the operation runs and lets it go as soon as it ends; a
// caller's deadline lets it go earlier, and an operation that is not running does not hold it.
func TestWaitEndedReturnsWhenTheOperationEnds(t *testing.T) {
	tr := NewTracker(zerolog.Nop())
	tr.Begin(context.Background())
	release := make(chan struct{})
	st, err := tr.Start("test", "", func(context.Context, *Op) error { <-release; return nil })
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	tr.WaitEnded(short, st.ID)
	cancel()
	if short.Err() == nil {
		t.Fatal("WaitEnded returned while the operation ran")
	}
	ended := make(chan struct{})
	go func() { tr.WaitEnded(context.Background(), st.ID); close(ended) }()
	select {
	case <-ended:
		t.Fatal("WaitEnded returned before the operation ended")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitEnded still waits after the operation ended")
	}
	if ops := tr.List(); ops[0].State == adminapi.OpRunning {
		t.Errorf("the operation is still running after WaitEnded: %+v", ops[0])
	}
	tr.WaitEnded(context.Background(), st.ID) // ended: at once
	tr.WaitEnded(context.Background(), 99)    // unknown: at once
}
