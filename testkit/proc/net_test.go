package proc

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
)

func TestWaitPort(t *testing.T) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := WaitPort(ctx, addr); err == nil {
		t.Fatal("WaitPort returned nil with nothing listening")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := WaitPort(ctx, addr); err != nil {
		t.Fatal(err)
	}
}

func TestLoopback(t *testing.T) {
	if got, err := Loopback("127.0.10.2", 3); err != nil || got != "127.0.10.5" {
		t.Fatalf("Loopback = %q, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.1", "::1", "127.0.0.250"} {
		if _, err := Loopback(bad, 5); err == nil {
			t.Errorf("Loopback(%q, 5) accepted", bad)
		}
	}
	p, err := FreePort("127.0.0.1", 0)
	if err != nil || p == 0 {
		t.Fatalf("FreePort = %d, %v", p, err)
	}
}
