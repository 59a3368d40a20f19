package core

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Healthz answers while the process serves.
func Healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// Readyz prints one line per readiness check of the peer, like
// Kubernetes: "[+]raft ok: ...".
func Readyz(cl Cluster) echo.HandlerFunc {
	return func(c echo.Context) error {
		var b strings.Builder
		ok := true
		for _, ch := range cl.Ready() {
			if ch.OK {
				fmt.Fprintf(&b, "[+]%s ok: %s\n", ch.Name, ch.Info)
			} else {
				ok = false
				fmt.Fprintf(&b, "[-]%s failed: %s\n", ch.Name, ch.Info)
			}
		}
		if !ok {
			b.WriteString("readyz check failed\n")
			return c.String(http.StatusServiceUnavailable, b.String())
		}
		b.WriteString("readyz check passed\n")
		return c.String(http.StatusOK, b.String())
	}
}
