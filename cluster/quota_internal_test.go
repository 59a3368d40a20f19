package cluster

import (
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
