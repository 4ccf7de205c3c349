package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
)

// The loading sidecar's journal: what a replica confirmed survives a restart (a fresh read of
// the file), belongs only to the same request over the same source sstables, and goes when
// the load completes.
func TestCassandraLoadJournal(t *testing.T) {
	snap := rebuildSnapshot()
	src := t.TempDir()
	generate(t, src, "both", "t", 1)
	generate(t, src, "both", "t", 2)
	req := adminapi.CassandraLoadRequest{Dirs: []string{src}}
	tables, err := collectLoad(snap, req)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := sourceFingerprint(tables)
	if err != nil {
		t.Fatal(err)
	}
	staging := t.TempDir()
	if j, err := readLoadJournal(staging); j != nil || err != nil {
		t.Fatalf("an empty staging directory has a journal: %+v %v", j, err)
	}
	j := newLoadJournal(staging, "abc123", req, fp)
	if err := j.save(); err != nil {
		t.Fatal(err)
	}
	key := loadTransferKey("both", "t", hostA, "(0,100]")
	if err := j.markDone(key, loadDone{Replica: "sa", SSTables: 2, Imported: []string{"/a", "/b"}}); err != nil {
		t.Fatal(err)
	}

	// After a restart: the same journal, the confirmed transfer in it, the other not.
	back, err := readLoadJournal(staging)
	if err != nil || back == nil {
		t.Fatalf("the journal did not survive: %v", err)
	}
	if !back.sameLoad(req, fp) || back.ID != "abc123" {
		t.Fatalf("the journal read back is of another load: %+v", back)
	}
	if d, ok := back.done(key); !ok || d.SSTables != 2 || len(d.Imported) != 2 {
		t.Errorf("the confirmed transfer: %+v %v", d, ok)
	}
	if _, ok := back.done(loadTransferKey("both", "t", hostB, "(0,100]")); ok {
		t.Error("a transfer never confirmed is recorded as done")
	}

	// Another request, or the same directories with a source sstable changed, is another load.
	if back.sameLoad(adminapi.CassandraLoadRequest{Dirs: []string{src, "/elsewhere"}}, fp) {
		t.Error("other directories resume this load")
	}
	generate(t, src, "both", "t", 3)
	tables, _ = collectLoad(snap, req)
	fp2, err := sourceFingerprint(tables)
	if err != nil {
		t.Fatal(err)
	}
	if fp2 == fp || back.sameLoad(req, fp2) {
		t.Error("a source directory with a new sstable resumes the old load")
	}

	if err := back.remove(); err != nil {
		t.Fatal(err)
	}
	if j, err := readLoadJournal(staging); j != nil || err != nil {
		t.Errorf("the journal of a completed load is still there: %v", err)
	}

	// A journal that cannot be parsed is an error naming the file, not an empty journal.
	if err := os.WriteFile(filepath.Join(staging, loadJournalFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readLoadJournal(staging); err == nil || !strings.Contains(err.Error(), loadJournalFile) {
		t.Errorf("a damaged journal: %v", err)
	}
}

// A replica's record of imported load transfers: a second ask for a recorded transfer is
// answered from the record; a second ask while the first is importing waits for it and then
// gets the record; a transfer that failed (never recorded) is attempted again.
func TestCassandraLoadReceivedRecord(t *testing.T) {
	staging := t.TempDir()
	r := loadReceivedOf(staging)
	if loadReceivedOf(staging) != r {
		t.Fatal("two records for one staging directory")
	}
	req := CassandraLoadPeerRequest{LoadID: "l1", Keyspace: "both", Table: "t", TableID: sidecarTableID, Ranges: "(0,100]"}
	key := receiptKey(req)
	_, found, end, err := r.begin(key, nil)
	if err != nil || found {
		t.Fatalf("a new transfer: found %v, %v", found, err)
	}
	// A second ask arrives while the first imports: it waits.
	type answer struct {
		rec   loadReceipt
		found bool
		err   error
	}
	second := make(chan answer, 1)
	go func() {
		rec, found, end2, err := r.begin(key, nil)
		if end2 != nil {
			end2()
		}
		second <- answer{rec, found, err}
	}()
	select {
	case a := <-second:
		t.Fatalf("the second ask did not wait for the import in flight: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	if err := r.record(key, loadReceipt{SSTables: 2, Imported: []string{"/live/a"}, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	end()
	a := <-second
	if a.err != nil || !a.found || len(a.rec.Imported) != 1 || a.rec.Imported[0] != "/live/a" {
		t.Errorf("the second ask: %+v", a)
	}
	// The record is on disk: a restarted sidecar (a fresh loadReceived) answers from it.
	if rec, found, _, err := newLoadReceived(staging).begin(key, nil); err != nil || !found || rec.SSTables != 2 {
		t.Errorf("after a restart: %+v %v %v", rec, found, err)
	}
	// Another load's transfer of the same ranges is not this one.
	other := req
	other.LoadID = "l2"
	_, found, end, err = r.begin(receiptKey(other), nil)
	if err != nil || found {
		t.Errorf("another load's transfer: found %v, %v", found, err)
	}
	end()
	// A failed attempt leaves no record: the next ask tries again.
	fail := req
	fail.Ranges = "(100,200]"
	_, _, end, _ = r.begin(receiptKey(fail), nil)
	end()
	if _, found, end, _ := r.begin(receiptKey(fail), nil); found {
		t.Error("a transfer that was never recorded is answered as imported")
	} else {
		end()
	}
}

// A damaged source sstable is refused by its path before anything is staged; the others are
// staged; the refusal is a failed transfer entry of the op, naming the file.
func TestCassandraLoadRefusesDamagedSource(t *testing.T) {
	snap := rebuildSnapshot()
	src := t.TempDir()
	generate(t, src, "both", "t", 1)
	generate(t, src, "both", "t", 2)
	tdir := gen.TableDir(src, "both", "t")
	live, err := catalog.ListLive(tdir)
	if err != nil || len(live) != 2 {
		t.Fatalf("%d sstables, %v", len(live), err)
	}
	bad := live[1].Desc.Path(descriptor.Data)
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tables, err := collectLoad(snap, adminapi.CassandraLoadRequest{Dirs: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	st := &OpStatus{}
	o := &op{ops.NewOp(st)}
	kept, errs := verifyLoadSources(context.Background(), tables, "self", o)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), bad) || !strings.Contains(errs[0].Error(), "nothing of it sent") {
		t.Fatalf("refusals: %v, want one naming %s", errs, bad)
	}
	if len(st.Transfers) != 1 || st.Transfers[0].From != bad || st.Transfers[0].To != adminapi.LoadRefused || st.Transfers[0].State != OpFailed {
		t.Errorf("the op's entry: %+v", st.Transfers)
	}
	staged, err := stageLoad(filepath.Join(t.TempDir(), "load-z"), kept)
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := catalog.ListLive(staged[[2]string{"both", "t"}])
	if len(ls) != 1 {
		t.Fatalf("staged %d sstables, want the good one alone", len(ls))
	}
	good, _ := os.Stat(live[0].Desc.Path(descriptor.Data))
	if fi, err := os.Stat(ls[0].Desc.Path(descriptor.Data)); err != nil || !os.SameFile(fi, good) {
		t.Errorf("the staged sstable is not the good source: %v", err)
	}

	// The journal is matched on what passed: the operator removing the damaged sstable and
	// running the load again resumes it.
	withBad, err := sourceFingerprint(kept)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range live[1].Comps {
		if err := os.Remove(live[1].Desc.Path(c)); err != nil {
			t.Fatal(err)
		}
	}
	tables, _ = collectLoad(snap, adminapi.CassandraLoadRequest{Dirs: []string{src}})
	without, err := sourceFingerprint(tables)
	if err != nil || without != withBad {
		t.Errorf("the load without the damaged sstable is another load: %s, was %s (%v)", without, withBad, err)
	}
}
