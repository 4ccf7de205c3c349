package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/adminapi"
)

// A lone replica has no peer to compare with: repair completes having compared nothing. Bad
// arguments are usage errors that never reach the node.
func TestRepairCommandRunsAndReports(t *testing.T) {
	_, admin := startMember(t)
	code, out, errs := sluice(t, "repair", "sluice.stress", "--admin", admin)
	if code != 0 || !strings.Contains(out, "repair complete") {
		t.Fatalf("repair: exit %d:\n%s%s", code, out, errs)
	}
	code, out, errs = sluice(t, "repair", "sluice.stress", "--ranges", "(0,100]", "--admin", admin, "--json")
	var st adminapi.OpStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Kind != adminapi.OpRepair || st.State != adminapi.OpComplete || st.Detail != "sluice.stress (0,100]" {
		t.Fatalf("repair --json: exit %d: %+v\n%s%s", code, st, out, errs)
	}
	for _, args := range [][]string{{"repair", "stress"}, {"repair", "sluice.stress", "--ranges", "(1,2"}, {"repair"}} {
		if code, _, errs := sluice(t, append(args, "--admin", admin)...); code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", args, code, errs)
		}
	}
	code, _, errs = sluice(t, "repair", "nokeyspace.t", "--admin", admin)
	if code == 0 || !strings.Contains(errs, "no replication") {
		t.Fatalf("repair of an unconfigured keyspace: exit %d: %s", code, errs)
	}
}
