package main

import (
	"regexp"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// namedRegistry is the agent's metrics registry; it also remembers the
// name of every metric registered with it, including vectors that have no
// sample yet, so that the deploy dashboards and alerts can be checked
// against what an agent exports (deploy_test.go).
type namedRegistry struct {
	*prometheus.Registry
	mu    sync.Mutex
	names map[string]bool
}

func newNamedRegistry() *namedRegistry {
	return &namedRegistry{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

// Register implements prometheus.Registerer.
func (r *namedRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		if m := fqNameRE.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *namedRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Names returns the names of every registered metric, sorted.
func (r *namedRegistry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.names))
	for n := range r.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
