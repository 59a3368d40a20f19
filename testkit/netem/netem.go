// Package netem cuts, degrades and heals the network between processes on
// 127.0.0.x addresses with iptables, for corral's real-process test tiers
// (e2e/ and jepsen/). Every rule names two hosts' addresses: traffic to
// anything else (127.0.0.1, where an Ironic may listen) is never touched.
// Every iptables failure is returned, none is swallowed: a test that
// believes it cut a link must have cut it.
//
// Processes open their TCP connections without binding a source address,
// so on loopback their packets leave from 127.0.0.1 and an address match
// alone cannot tell who sent them. A Host is therefore recognised by what
// its own sockets send, on OUTPUT (which every loopback packet crosses):
// by the socket owner's uid (the process runs as a uid of its own) or by
// its cgroup2 path (it runs in a cgroup of its own; see proc.Cgroups).
//
// It must not import corral's internals (fsm, cluster, api, ironic, …):
// the jepsen module imports it and treats corral as a black box.
package netem

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Host is one end of a link.
type Host struct {
	Name string
	IP   string // the address its listeners are bound to
	// How its packets are recognised; at most one. With neither, only
	// what it sends from sockets bound to IP is matched.
	UID    int    // owner uid of its sockets
	Cgroup string // its cgroup2 path relative to the mount
}

// match is the iptables match of what h sends.
func (h Host) match() []string {
	switch {
	case h.UID != 0:
		return []string{"-m", "owner", "--uid-owner", strconv.Itoa(h.UID)}
	case h.Cgroup != "":
		return []string{"-m", "cgroup", "--path", h.Cgroup}
	}
	return []string{"-s", h.IP + "/32"}
}

// identified reports whether h is matched by more than its address.
func (h Host) identified() bool { return h.UID != 0 || h.Cgroup != "" }

// Link is one direction of traffic that a rule degrades.
type Link struct {
	From, To string  // host names
	Drop     float64 // share of packets dropped: 1 is a cut
}

func (l Link) String() string {
	if l.Drop >= 1 {
		return l.From + "->" + l.To
	}
	return fmt.Sprintf("%s->%s(drop %.0f%%)", l.From, l.To, 100*l.Drop)
}

// Firewall owns two iptables chains, hooked first into OUTPUT and INPUT.
type Firewall struct {
	out, in string // chain names
	run     func(args ...string) error

	mu     sync.Mutex
	hooked bool
	links  map[[2]string]rule
}

type rule struct {
	link Link
	out  []string // rule spec in the OUTPUT chain
	in   []string // rule spec in the INPUT chain (nil: none)
}

// New returns a firewall whose chains are called <name>-OUT and <name>-IN
// (name: letters, digits, dashes; at most 24 characters). Leftovers of an
// earlier run under the same name (a crashed test) are removed first.
func New(name string) (*Firewall, error) {
	if len(name) == 0 || len(name) > 24 {
		return nil, fmt.Errorf("chain name %q: want 1 to 24 characters", name)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: not running as root", ErrNoIptables)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoIptables, err)
	}
	f := &Firewall{out: name + "-OUT", in: name + "-IN", run: iptables, links: map[[2]string]rule{}}
	if err := f.teardown(); err != nil {
		return nil, fmt.Errorf("remove leftover rules: %w", err)
	}
	return f, nil
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "10"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (f *Firewall) chains() [][2]string { return [][2]string{{f.out, "OUTPUT"}, {f.in, "INPUT"}} }

// hook creates the chains and jumps to them first thing from OUTPUT and
// INPUT.
func (f *Firewall) hook() error {
	if f.hooked {
		return nil
	}
	for _, c := range f.chains() {
		if err := f.run("-N", c[0]); err != nil {
			return err
		}
		if err := f.run("-I", c[1], "1", "-j", c[0]); err != nil {
			return err
		}
	}
	f.hooked = true
	return nil
}

// teardown unhooks and deletes the chains, whether or not this firewall
// created them; what is not there is no error.
func (f *Firewall) teardown() error {
	var errs []error
	for _, c := range f.chains() {
		if f.run("-L", c[0], "-n") != nil {
			continue // no such chain
		}
		for f.run("-C", c[1], "-j", c[0]) == nil {
			if err := f.run("-D", c[1], "-j", c[0]); err != nil {
				errs = append(errs, err)
				break
			}
		}
		if err := f.run("-F", c[0]); err != nil {
			errs = append(errs, err)
		}
		if err := f.run("-X", c[0]); err != nil {
			errs = append(errs, err)
		}
	}
	f.hooked = false
	return errors.Join(errs...)
}

// Block drops everything from sends to to.
func (f *Firewall) Block(from, to Host) error { return f.Drop(from, to, 1) }

// Drop drops the share p (0 < p ≤ 1) of the packets from sends to to,
// at random (iptables' statistic match); p = 1 is Block. A link already
// degraded is changed to p.
func (f *Firewall) Drop(from, to Host, p float64) error {
	if !(p > 0 && p <= 1) {
		return fmt.Errorf("drop probability %v: want 0 < p <= 1", p)
	}
	if from.IP == "" || to.IP == "" || from.IP == to.IP {
		return fmt.Errorf("link %s(%s) -> %s(%s): want two distinct addresses", from.Name, from.IP, to.Name, to.IP)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{from.Name, to.Name}
	if r, ok := f.links[key]; ok {
		if r.link.Drop == p {
			return nil
		}
		if err := f.remove(r); err != nil {
			return err
		}
		delete(f.links, key)
	}
	if err := f.hook(); err != nil {
		return err
	}
	var stat []string
	if p < 1 {
		stat = []string{"-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(p, 'f', 4, 64)}
	}
	r := rule{link: Link{From: from.Name, To: to.Name, Drop: p}}
	r.out = append(append(append([]string{"-d", to.IP + "/32"}, from.match()...), stat...), "-j", "DROP")
	// What from sends from a socket bound to its own address (gossip's
	// UDP) is also dropped on INPUT, unless a probabilistic drop would
	// then roll twice for one packet.
	if from.identified() && p == 1 {
		r.in = []string{"-s", from.IP + "/32", "-d", to.IP + "/32", "-j", "DROP"}
	}
	if err := f.run(append([]string{"-A", f.out}, r.out...)...); err != nil {
		return err
	}
	if r.in != nil {
		if err := f.run(append([]string{"-A", f.in}, r.in...)...); err != nil {
			return errors.Join(err, f.run(append([]string{"-D", f.out}, r.out...)...))
		}
	}
	f.links[key] = r
	return nil
}

func (f *Firewall) remove(r rule) error {
	var errs []error
	if err := f.run(append([]string{"-D", f.out}, r.out...)...); err != nil {
		errs = append(errs, err)
	}
	if r.in != nil {
		if err := f.run(append([]string{"-D", f.in}, r.in...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Cut blocks both directions between every host of a and every host of b
// (a host in both is not cut from itself).
func (f *Firewall) Cut(a, b []Host) error {
	for _, x := range a {
		for _, y := range b {
			if x.Name == y.Name {
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

// Isolate cuts h from every other host.
func (f *Firewall) Isolate(h Host, others []Host) error { return f.Cut([]Host{h}, others) }

// Restore removes the rule of one direction, if any.
func (f *Firewall) Restore(from, to Host) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := [2]string{from.Name, to.Name}
	r, ok := f.links[key]
	if !ok {
		return nil
	}
	if err := f.remove(r); err != nil {
		return err
	}
	delete(f.links, key)
	return nil
}

// Heal removes every rule; the chains stay hooked (and empty).
func (f *Firewall) Heal() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hooked {
		f.links = map[[2]string]rule{}
		return nil
	}
	var errs []error
	for _, c := range f.chains() {
		if err := f.run("-F", c[0]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		f.links = map[[2]string]rule{}
	}
	return errors.Join(errs...)
}

// Close removes every rule, unhooks and deletes the chains. Safe to call
// more than once.
func (f *Firewall) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links = map[[2]string]rule{}
	return f.teardown()
}

// Links lists the degraded links, sorted.
func (f *Firewall) Links() []Link {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Link
	for _, r := range f.links {
		out = append(out, r.link)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// Describe names the degraded links, a link cut both ways once:
// "n1-x-n2 n1->n3 n2->n4(drop 30%)".
func (f *Firewall) Describe() string {
	links := f.Links()
	cut := map[[2]string]bool{}
	for _, l := range links {
		if l.Drop >= 1 {
			cut[[2]string{l.From, l.To}] = true
		}
	}
	var out []string
	for _, l := range links {
		switch {
		case l.Drop >= 1 && cut[[2]string{l.To, l.From}]:
			if l.From < l.To {
				out = append(out, l.From+"-x-"+l.To)
			}
		default:
			out = append(out, l.String())
		}
	}
	return strings.Join(out, " ")
}
