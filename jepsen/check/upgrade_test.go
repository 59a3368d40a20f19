package check

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

func TestUpgrade(t *testing.T) {
	s := func(sec float64, enc string) history.EncodingSwitch {
		return history.EncodingSwitch{Agent: "n1", At: int64(sec * float64(time.Second)), Encoding: enc}
	}
	up := []history.Window{{Name: "kill", Start: 1e9, End: 2e9}, {Name: "upgrade", Start: 60e9, End: 70e9}}
	for _, c := range []struct {
		name     string
		u        history.Upgrade
		windows  []history.Window
		valid    bool
		problems string
	}{
		{"JSON before the upgraded agent starts, msgpack after", history.Upgrade{Switches: []history.EncodingSwitch{s(1, "json"), s(71, "msgpack")}}, up, true, ""},
		{"msgpack while the old release ran", history.Upgrade{Switches: []history.EncodingSwitch{s(1, "json"), s(65, "msgpack"), s(71, "msgpack")}}, up, false, "before the upgraded"},
		{"no msgpack at all", history.Upgrade{Switches: []history.EncodingSwitch{s(1, "json")}}, up, false, "no leader wrote msgpack"},
		{"an old release that reads msgpack", history.Upgrade{FromReadsMsgpack: true, Switches: []history.EncodingSwitch{s(1, "msgpack")}}, up, true, ""},
		{"never upgraded", history.Upgrade{Switches: []history.EncodingSwitch{s(1, "json")}}, up[:1], false, "never upgraded"},
		{"the upgrade failed", history.Upgrade{Switches: []history.EncodingSwitch{s(71, "msgpack")}},
			[]history.Window{{Name: "upgrade", Start: 60e9, End: 70e9, HealError: "start n5: exec format error"}}, false, "exec format error"},
	} {
		c.u.Agent = "n5"
		r := Upgrade(&c.u, c.windows)
		if r.Valid != c.valid || !strings.Contains(strings.Join(r.Problems, "; "), c.problems) {
			t.Errorf("%s: valid %v, problems %q", c.name, r.Valid, r.Problems)
		}
	}
}
