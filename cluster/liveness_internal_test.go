package cluster

import (
	"context"
	"net"
	"testing"
	"time"
)

// The probe tells a process that is gone (nothing listens: refused) from
// one that is only slow or paused (its listener is there: the kernel
// accepts the connection even if the process never calls accept).
func TestProbeTellsGoneFromSlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Paused: listening, never accepting.
	a, b := listen(), listen()
	defer a.Close()
	defer b.Close()
	if refused, accepted := probe(ctx, a.Addr().String(), b.Addr().String()); refused || !accepted {
		t.Fatalf("listening but not accepting: refused %v, accepted %v; want accepted", refused, accepted)
	}
	// Gone: both closed.
	c, d := listen(), listen()
	ca, da := c.Addr().String(), d.Addr().String()
	c.Close()
	d.Close()
	if refused, accepted := probe(ctx, ca, da); !refused || accepted {
		t.Fatalf("both ports closed: refused %v, accepted %v; want refused", refused, accepted)
	}
	// One port still open: the process is there.
	if refused, accepted := probe(ctx, ca, a.Addr().String()); refused || !accepted {
		t.Fatalf("one port closed, one open: refused %v, accepted %v; want accepted", refused, accepted)
	}
	// An address that is not host:port says nothing.
	if got := dial(ctx, "not-an-address"); got != dialUnknown {
		t.Fatalf("dial of a bad address: %v, want unknown", got)
	}
}
