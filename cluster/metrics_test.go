package cluster_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/corral-dev/corral/cluster/clustertest"
)

// metricValue reads a counter from a peer's registry; label, when not
// empty, selects the series carrying that label value.
func metricValue(t *testing.T, p *clustertest.Peer, name, label string) float64 {
	t.Helper()
	mfs, err := p.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || hasLabel(m, label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}
