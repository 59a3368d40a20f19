package upgrade

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

const upgradeDoc = "../../docs/upgrade-from-nova-baremetal.md"

// docCommand returns the arguments (after "corral") of the command that
// the operator doc gives under the heading that starts with heading, with
// the doc's variables replaced from vars and the values of the flags in
// set replaced (the test's per-run resource class, the simulator's
// driver). A flag of set the doc does not name is added, so the only
// differences from the doc are the ones the caller spells out.
func docCommand(t *testing.T, heading string, vars map[string]string, set map[string]string) []string {
	t.Helper()
	b, err := os.ReadFile(upgradeDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading)
	if i < 0 {
		t.Fatalf("%s has no heading %q", upgradeDoc, heading)
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	if start < 0 {
		t.Fatalf("%s: no sh block under %q", upgradeDoc, heading)
	}
	text = text[start+len("```sh\n"):]
	block := text[:strings.Index(text, "```")]
	line := strings.ReplaceAll(block, "\\\n", " ")
	line = strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "corral" {
		t.Fatalf("%s under %q: %q is not a corral command", upgradeDoc, heading, line)
	}
	var args []string
	seen := map[string]bool{}
	for k := 1; k < len(fields); k++ {
		f := strings.Trim(fields[k], `"'`)
		if strings.HasPrefix(f, "$") {
			v, ok := vars[strings.TrimPrefix(f, "$")]
			if !ok {
				t.Fatalf("%s under %q uses %s, which the test does not set", upgradeDoc, heading, f)
			}
			f = v
		}
		args = append(args, f)
		if v, ok := set[f]; ok && k+1 < len(fields) && !strings.HasPrefix(fields[k+1], "--") {
			args = append(args, v)
			seen[f] = true
			k++
		}
	}
	for _, flag := range slices.Sorted(maps.Keys(set)) {
		if !seen[flag] {
			args = append(args, flag, set[flag])
		}
	}
	return args
}

func TestDocCommandParsing(t *testing.T) {
	got := docCommand(t, "### 8. Migrate", map[string]string{"NOVA_BM_DB": "bm", "NOVA_DB": "nova", "IRONIC_URL": "http://ir"},
		map[string]string{"--resource-class": "rc", "--driver": "fake-hardware", "--mirror-timeout": "9s"})
	want := "manage baremetal-migrate --nova-bm-db bm --nova-db nova --resource-class rc --driver fake-hardware --ironic-url http://ir --mirror-timeout 9s"
	if strings.Join(got, " ") != want {
		t.Fatalf("doc command:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
