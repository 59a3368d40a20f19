package testkit

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// InCI reports whether the tests run in CI ($CI is true; .ci/run sets
// it), where every service a tier needs is started and named.
func InCI() bool { return strings.EqualFold(os.Getenv("CI"), "true") }

// Missing stops a test whose service its environment does not name, and
// says so loudly: why, in capitals, goes to stderr too, so that a run
// without the service shows what it did not test. In CI it fails the
// test (CI starts every service: one missing is a broken CI, not a
// reason to pass); elsewhere it skips it.
func Missing(t testing.TB, why string) {
	t.Helper()
	loud := strings.ToUpper(why)
	fmt.Fprintln(os.Stderr, t.Name()+": "+loud)
	if InCI() {
		t.Fatal(loud + " (CI=true: .ci/run starts this service and names it; a tier that cannot run fails)")
	}
	t.Skip(loud)
}
