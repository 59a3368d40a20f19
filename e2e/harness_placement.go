package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// StartWith is Start with a hook that adjusts each agent (its Args and
// Env) before its first start: a host's kind is part of its identity, so
// a cluster mixing hypervisor and ironic hosts must give each agent its
// kind from the beginning. adjust may be nil.
func StartWith(t testing.TB, n int, opts Options, adjust func(i int, a *Agent)) *Cluster {
	t.Helper()
	if opts.BaseIP == 0 {
		opts.BaseIP = 2
	}
	c := Start(t, 0, opts) // the cluster's directory, token and clean-up, no agents yet
	for i := 0; i < n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", opts.BaseIP+i)
		a := &Agent{Name: fmt.Sprintf("peer%d", i+1), IP: ip, c: c,
			HTTPPort: freePort(t, ip), RaftPort: freePort(t, ip), GossipPort: freePort(t, ip),
			Args: append([]string{"--bootstrap-expect", strconv.Itoa(n)}, opts.ExtraArgs...),
			Env:  append([]string(nil), opts.Env...)}
		a.DataDir = filepath.Join(c.Dir, a.Name)
		c.Agents = append(c.Agents, a)
	}
	for _, a := range c.Agents {
		for _, o := range c.Agents {
			a.Args = append(a.Args, "--join", o.GossipAddr())
		}
	}
	for i, a := range c.Agents {
		if adjust != nil {
			adjust(i, a)
		}
	}
	for _, a := range c.Agents {
		a.Start()
	}
	return c
}
