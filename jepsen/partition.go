package main

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Chains the suite owns. Rules matching the sending process (owner match)
// are only allowed on the output path, hence two chains.
const (
	chainIn  = "JEPSEN_IN"
	chainOut = "JEPSEN_OUT"
)

// Firewall cuts links between agents with iptables. Peers open their TCP
// connections (raft, forwarding, gossip streams) without binding the source
// address, so on loopback their packets leave from 127.0.0.1: a link is cut
// by dropping, on OUTPUT, what the sender's uid sends to the receiver's
// address (owner match), and, on INPUT, what comes from the sender's
// address to the receiver's (gossip UDP, which is bound). Every rule names
// two agent addresses: traffic to 127.0.0.1 (Ironic) is never touched.
type Firewall struct {
	mu      sync.Mutex
	hooked  bool
	blocked map[[2]string]bool // from agent name → to agent name
	cl      *Cluster
}

// NewFirewall removes leftovers of an earlier run and returns a firewall.
func NewFirewall(cl *Cluster) (*Firewall, error) {
	f := &Firewall{cl: cl, blocked: map[[2]string]bool{}}
	f.teardown()
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("partitions need iptables: %w", err)
	}
	for _, a := range cl.Agents {
		if a.UID == 0 {
			return nil, fmt.Errorf("partitions need the agents to run as their own uids (run the suite as root)")
		}
	}
	return f, nil
}

func ipt(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "10"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (f *Firewall) hook() error {
	if f.hooked {
		return nil
	}
	for _, c := range [][2]string{{chainIn, "INPUT"}, {chainOut, "OUTPUT"}} {
		if err := ipt("-N", c[0]); err != nil {
			return err
		}
		if err := ipt("-I", c[1], "1", "-j", c[0]); err != nil {
			return err
		}
	}
	f.hooked = true
	return nil
}

// teardown flushes and deletes the chains, ignoring what is not there.
func (f *Firewall) teardown() {
	for _, c := range [][2]string{{chainIn, "INPUT"}, {chainOut, "OUTPUT"}} {
		for ipt("-D", c[1], "-j", c[0]) == nil {
		}
		_ = ipt("-F", c[0])
		_ = ipt("-X", c[0])
	}
	f.hooked = false
}

// Block drops everything agent from sends to agent to.
func (f *Firewall) Block(from, to *Agent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{from.Name, to.Name}
	if f.blocked[key] {
		return nil
	}
	if err := f.hook(); err != nil {
		return err
	}
	if err := ipt("-A", chainOut, "-d", to.IP+"/32", "-m", "owner", "--uid-owner", strconv.Itoa(from.UID), "-j", "DROP"); err != nil {
		return err
	}
	if err := ipt("-A", chainIn, "-s", from.IP+"/32", "-d", to.IP+"/32", "-j", "DROP"); err != nil {
		return err
	}
	f.blocked[key] = true
	return nil
}

// Cut blocks both directions between every agent of a and every agent of b.
func (f *Firewall) Cut(a, b []*Agent) error {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				continue
			}
			if err := f.Block(x, y); err != nil {
				return err
			}
			if err := f.Block(y, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal removes every rule and the chains.
func (f *Firewall) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardown()
	f.blocked = map[[2]string]bool{}
}

// Describe lists the cut links, e.g. "n1-x-n2 n1-x-n3".
func (f *Firewall) Describe() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.blocked {
		if k[0] < k[1] && f.blocked[[2]string{k[1], k[0]}] {
			out = append(out, k[0]+"-x-"+k[1])
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
