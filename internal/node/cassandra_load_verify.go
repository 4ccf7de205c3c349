package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// loadVerifyWorkers bounds the source sstables verified at once (each reads its Data.db
// through once).
const loadVerifyWorkers = 2

// verifyLoadSource checks one source sstable (its Data.db path); a var so tests can count or
// fake it.
var verifyLoadSource = cassandra.VerifyStrict

// verifyLoadSources verifies every complete sstable of the load's tables strictly (every
// chunk's CRC, the digest, the layout Cassandra's readers need) before anything is staged.
// It returns the tables with only the sstables that passed (in loadTable.Skip the others'
// Data.db paths), and one error per refused sstable naming its path and what was wrong;
// each refusal is also a failed entry of the op's transfers (To adminapi.LoadRefused, From
// the Data.db path).
func verifyLoadSources(ctx context.Context, tables []loadTable, self string, o *op) ([]loadTable, []error) {
	type job struct {
		table int
		data  string
	}
	var jobs []job
	for i, t := range tables {
		for _, dir := range t.Dirs {
			live, err := catalog.ListLive(dir)
			if err != nil {
				continue // stageLoad reports it
			}
			for _, s := range live {
				jobs = append(jobs, job{table: i, data: s.Desc.Path(descriptor.Data)})
			}
		}
	}
	bad := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, loadVerifyWorkers)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := ctx.Err(); err != nil {
				bad[i] = err
				return
			}
			bad[i] = verifyLoadSource(j.data)
		}()
	}
	wg.Wait()
	out := make([]loadTable, len(tables))
	copy(out, tables)
	var errs []error
	for i, j := range jobs {
		if bad[i] == nil {
			continue
		}
		t := &out[j.table]
		if t.Skip == nil {
			t.Skip = map[string]bool{}
		}
		t.Skip[j.data] = true
		err := fmt.Errorf("%s.%s: source sstable %s refused, nothing of it sent: %w", t.Keyspace, t.Table, j.data, bad[i])
		errs = append(errs, err)
		if o != nil {
			o.update(func(st *OpStatus) {
				st.Transfers = append(st.Transfers, TransferStatus{From: j.data, To: adminapi.LoadRefused, Keyspace: t.Keyspace, Table: t.Table,
					State: OpFailed, Error: err.Error()})
			})
		}
	}
	return out, errs
}
