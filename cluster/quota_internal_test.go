package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/fsm"
)

// TestRecordQuotaDefaults: the leader records its [quota] only when every
// live peer is configured alike and the state holds other limits.
func TestRecordQuotaDefaults(t *testing.T) {
	a := fsm.NovaQuotaDefaults()
	b := fsm.NovaQuotaDefaults()
	b[fsm.QuotaInstances] = 40
	cases := []struct {
		name          string
		own, recorded fsm.QuotaLimits
		agreed        string
		ok, known     bool
		want          bool
	}{
		{"every peer has it, nothing recorded yet", a, fsm.QuotaLimits{}, quotaDigest(a), true, true, true},
		{"every peer has the new limits (rolling change done)", b, a, quotaDigest(b), true, true, true},
		{"already recorded", a, a, quotaDigest(a), true, true, false},
		{"a live peer has other limits", b, a, "", false, true, false},
		{"the peers agree on limits other than the leader's", b, a, quotaDigest(a), true, true, false},
		{"a peer predates the command", a, fsm.QuotaLimits{}, quotaDigest(a), true, false, false},
		{"the leader sets none", nil, a, quotaDigest(a), true, true, false},
	}
	for _, c := range cases {
		if got := recordQuotaDefaults(c.own, c.recorded, c.agreed, c.ok, c.known); got != c.want {
			t.Errorf("%s: record = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCheckQuotaCommand: a quota change waits until every live peer can
// apply it; other commands do not.
func TestCheckQuotaCommand(t *testing.T) {
	none := func(fsm.CommandType) bool { return false }
	all := func(fsm.CommandType) bool { return true }
	for _, cmd := range []fsm.Command{&fsm.UpdateQuotas{ProjectID: "p"}, &fsm.DeleteQuotas{ProjectID: "p"}, &fsm.SetQuotaDefaults{}} {
		if err := checkQuotaCommand(cmd, none); !errors.Is(err, fsm.ErrConflict) || !strings.Contains(err.Error(), "upgrade every peer") {
			t.Errorf("%T with a peer that cannot apply it: %v, want a conflict", cmd, err)
		}
		if err := checkQuotaCommand(cmd, all); err != nil {
			t.Errorf("%T with every peer able: %v", cmd, err)
		}
	}
	if err := checkQuotaCommand(&fsm.CreateFlavor{}, none); err != nil {
		t.Errorf("a flavor waits for quotas: %v", err)
	}
}
