package netem

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// fake records iptables calls; a call whose text contains failOn fails,
// as does -L/-C of a chain that does not exist.
type fake struct {
	calls  []string
	chains map[string]bool
	failOn string
}

func (k *fake) run(args ...string) error {
	s := strings.Join(args, " ")
	k.calls = append(k.calls, s)
	if k.failOn != "" && strings.Contains(s, k.failOn) {
		return fmt.Errorf("iptables %s: exit status 1", s)
	}
	switch args[0] {
	case "-N":
		k.chains[args[1]] = true
	case "-X":
		delete(k.chains, args[1])
	case "-L":
		if !k.chains[args[1]] {
			return errors.New("no chain")
		}
	case "-C":
		if !k.chains[args[3]] {
			return errors.New("no rule")
		}
		// A hook is checked before each delete; after one it is gone.
		if slices.Contains(k.calls[:len(k.calls)-1], "-D "+args[1]+" -j "+args[3]) {
			return errors.New("no rule")
		}
	}
	return nil
}

func newFake(t *testing.T) (*Firewall, *fake) {
	t.Helper()
	k := &fake{chains: map[string]bool{}}
	return &Firewall{out: "T-OUT", in: "T-IN", run: k.run, links: map[[2]string]rule{}}, k
}

var (
	n1 = Host{Name: "n1", IP: "127.0.0.2", UID: 61101}
	n2 = Host{Name: "n2", IP: "127.0.0.3", Cgroup: "corral/n2"}
	n3 = Host{Name: "n3", IP: "127.0.0.4"}
)

func TestBlockMatchesTheSenderByIdentity(t *testing.T) {
	f, k := newFake(t)
	if err := f.Block(n1, n2); err != nil {
		t.Fatal(err)
	}
	if err := f.Block(n2, n3); err != nil {
		t.Fatal(err)
	}
	if err := f.Block(n3, n1); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-N T-OUT", "-I OUTPUT 1 -j T-OUT", "-N T-IN", "-I INPUT 1 -j T-IN",
		"-A T-OUT -d 127.0.0.3/32 -m owner --uid-owner 61101 -j DROP",
		"-A T-IN -s 127.0.0.2/32 -d 127.0.0.3/32 -j DROP",
		"-A T-OUT -d 127.0.0.4/32 -m cgroup --path corral/n2 -j DROP",
		"-A T-IN -s 127.0.0.3/32 -d 127.0.0.4/32 -j DROP",
		"-A T-OUT -d 127.0.0.2/32 -s 127.0.0.4/32 -j DROP",
	}
	if !slices.Equal(k.calls, want) {
		t.Fatalf("iptables calls:\n%s\nwant:\n%s", strings.Join(k.calls, "\n"), strings.Join(want, "\n"))
	}
	if got := f.Describe(); got != "n1->n2 n2->n3 n3->n1" {
		t.Fatalf("Describe = %q", got)
	}
}

func TestDropWithProbabilityRollsOnce(t *testing.T) {
	f, k := newFake(t)
	if err := f.Drop(n1, n2, 0.3); err != nil {
		t.Fatal(err)
	}
	last := k.calls[len(k.calls)-1]
	if last != "-A T-OUT -d 127.0.0.3/32 -m owner --uid-owner 61101 -m statistic --mode random --probability 0.3000 -j DROP" {
		t.Fatalf("last call %q", last)
	}
	for _, c := range k.calls {
		if strings.HasPrefix(c, "-A T-IN") {
			t.Fatalf("a probabilistic drop also added an INPUT rule: %q", c)
		}
	}
	// Changing the probability replaces the rule.
	if err := f.Block(n1, n2); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.calls, "-D T-OUT -d 127.0.0.3/32 -m owner --uid-owner 61101 -m statistic --mode random --probability 0.3000 -j DROP") {
		t.Fatalf("the 30%% rule was not removed: %v", k.calls)
	}
	if got := f.Links(); len(got) != 1 || got[0].Drop != 1 {
		t.Fatalf("links %v", got)
	}
	for _, p := range []float64{0, -1, 1.5} {
		if err := f.Drop(n1, n3, p); err == nil {
			t.Errorf("Drop with p=%v accepted", p)
		}
	}
}

func TestErrorsAreReturned(t *testing.T) {
	f, k := newFake(t)
	k.failOn = "-A T-IN"
	err := f.Cut([]Host{n1}, []Host{n2})
	if err == nil || !strings.Contains(err.Error(), "-A T-IN") {
		t.Fatalf("Cut = %v, want the failing iptables call", err)
	}
	if len(f.Links()) != 0 {
		t.Fatalf("a link whose rule failed is recorded: %v", f.Links())
	}
	if !slices.Contains(k.calls, "-D T-OUT -d 127.0.0.3/32 -m owner --uid-owner 61101 -j DROP") {
		t.Fatalf("the half-added OUTPUT rule was not taken back: %v", k.calls)
	}
	k.failOn = "-F T-OUT"
	if err := f.Heal(); err == nil {
		t.Fatal("Heal hid a failing flush")
	}
	k.failOn = ""
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseRemovesChainsAndHooks(t *testing.T) {
	f, k := newFake(t)
	if err := f.Isolate(n1, []Host{n2, n3}); err != nil {
		t.Fatal(err)
	}
	if got := f.Describe(); got != "n1-x-n2 n1-x-n3" {
		t.Fatalf("Describe = %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-D OUTPUT -j T-OUT", "-D INPUT -j T-IN", "-X T-OUT", "-X T-IN"} {
		if !slices.Contains(k.calls, want) {
			t.Errorf("Close did not run %q", want)
		}
	}
	if len(k.chains) != 0 || len(f.Links()) != 0 {
		t.Fatalf("left chains %v links %v", k.chains, f.Links())
	}
	n := len(k.calls)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range k.calls[n:] {
		if !strings.HasPrefix(c, "-L ") {
			t.Errorf("second Close ran %q", c)
		}
	}
}

// TestBlockOnLoopback drops real packets between two bound UDP sockets on
// 127.0.0.x, then heals (needs root and iptables).
func TestBlockOnLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for iptables")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("needs iptables")
	}
	f, err := New(fmt.Sprintf("NETEM-T%d", os.Getpid()%100000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	a, b := Host{Name: "a", IP: "127.0.0.61"}, Host{Name: "b", IP: "127.0.0.62"}
	ca, err := net.ListenPacket("udp", a.IP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := net.ListenPacket("udp", b.IP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	delivered := func() bool {
		if _, err := ca.WriteTo([]byte("ping"), cb.LocalAddr()); err != nil {
			return false // a packet dropped on OUTPUT fails the send (EPERM)
		}
		_ = cb.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 8)
		_, _, err := cb.ReadFrom(buf)
		return err == nil
	}
	if !delivered() {
		t.Fatal("no packet before the cut")
	}
	if err := f.Block(a, b); err != nil {
		t.Fatal(err)
	}
	if delivered() {
		t.Fatal("a packet crossed the cut")
	}
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
	if !delivered() {
		t.Fatal("no packet after the heal")
	}
}
