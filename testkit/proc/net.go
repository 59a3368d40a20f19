package proc

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// FreePort returns a port that is free for both TCP and UDP on ip (a
// memberlist-style peer needs both) and is none of not.
func FreePort(ip string, not ...int) (int, error) {
	for tries := 0; tries < 100; tries++ {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return 0, fmt.Errorf("no free port on %s: %w", ip, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		taken := false
		for _, n := range not {
			taken = taken || n == port
		}
		if taken {
			continue
		}
		if u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port on %s free for both TCP and UDP", ip)
}

// Loopback returns 127.0.0.<first+i> style addresses: the i-th address
// after base (an IPv4 address in 127.0.0.0/8).
func Loopback(base string, i int) (string, error) {
	ip := net.ParseIP(base).To4()
	if ip == nil || ip[0] != 127 {
		return "", fmt.Errorf("%q is not a loopback IPv4 address", base)
	}
	if int(ip[3])+i > 254 {
		return "", fmt.Errorf("%s + %d leaves %d.%d.%d.0/24", base, i, ip[0], ip[1], ip[2])
	}
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+byte(i)).String(), nil
}

// WaitPort waits until something accepts TCP connections on addr
// (host:port), or ctx ends.
func WaitPort(ctx context.Context, addr string) error {
	wait := 10 * time.Millisecond
	for {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return c.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("nothing listens on %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-t.C:
		}
		if wait < 200*time.Millisecond {
			wait *= 2
		}
	}
}
