package novabm_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/upgrade/novabm"
	"github.com/corral-dev/corral/upgrade/novabm/novabmtest"
)

// mariaDB returns the socket and TCP address of the MariaDB started by
// scripts/mariadb-up.sh, or skips the test.
func mariaDB(t *testing.T) (string, string) {
	sock, addr := os.Getenv("MARIADB_SOCKET"), os.Getenv("MARIADB_ADDR")
	if sock == "" || addr == "" {
		t.Skip("MARIADB_SOCKET and MARIADB_ADDR are not set: source the env file of scripts/mariadb-up.sh to run this test")
	}
	return sock, addr
}

// The same deployment read from MariaDB (two databases, two users) and
// from SQLite gives the same plan.
func TestMariaDBReadsLikeSQLite(t *testing.T) {
	sock, addr := mariaDB(t)
	ctx := context.Background()
	d := novabmtest.Realistic(2, 3)
	bmURL, bmDB, err := novabmtest.MariaDB(ctx, sock, addr, "ut_nova_bm", "ut_bm", "bm-pw")
	if err != nil {
		t.Fatal(err)
	}
	defer bmDB.Close()
	novaURL, novaDB, err := novabmtest.MariaDB(ctx, sock, addr, "ut_nova", "ut_nova", "nova-pw")
	if err != nil {
		t.Fatal(err)
	}
	defer novaDB.Close()
	if err := d.WriteBareMetal(ctx, bmDB); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteNova(ctx, novaDB); err != nil {
		t.Fatal(err)
	}
	bm, nv, err := read(t, bmURL, novaURL)
	if err != nil {
		t.Fatal(err)
	}
	sbmURL, snovaURL := writeFixture(t, d)
	sbm, snv, err := read(t, sbmURL, snovaURL)
	if err != nil {
		t.Fatal(err)
	}
	o := novabm.Options{DeployKernel: "k", DeployRamdisk: "r"}
	if got, want := novabm.BuildPlan(bm, nv, o), novabm.BuildPlan(sbm, snv, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("MariaDB plan differs from SQLite's:\n%+v\n%+v", got, want)
	}
	// Each user sees its own database only: nova's credentials cannot read nova_bm.
	crossed := strings.Replace(bmURL, "ut_bm:bm-pw", "ut_nova:nova-pw", 1)
	if _, _, err := read(t, crossed, novaURL); !errors.Is(err, novabm.ErrUnreadable) {
		t.Fatalf("nova's user reading nova_bm: %v", err)
	}
	// A wrong password is unreadable, and the message hides the password.
	wrong := strings.Replace(bmURL, "bm-pw", "not-the-pw", 1)
	_, _, err = read(t, wrong, novaURL)
	if !errors.Is(err, novabm.ErrUnreadable) || strings.Contains(err.Error(), "not-the-pw") {
		t.Fatalf("wrong password: %v", err)
	}
}
