package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIronicTarget(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "corral.conf")
	if err := os.WriteFile(conf, []byte("[DEFAULT]\nname = c1\n[ironic]\nurl = http://127.0.0.1:6385\nmax_version = 1.78\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noURL := filepath.Join(dir, "hv.conf")
	if err := os.WriteFile(noURL, []byte("[DEFAULT]\nhost_kind = hypervisor\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, v, err := ironicTarget{config: conf}.resolve()
	if err != nil || u != "http://127.0.0.1:6385" || v != "1.78" {
		t.Fatalf("from --config: %q %q %v", u, v, err)
	}
	if u, _, err := (ironicTarget{url: "http://127.0.0.1:6390"}).resolve(); err != nil || u != "http://127.0.0.1:6390" {
		t.Fatalf("from --ironic-url: %q %v", u, err)
	}
	for name, tgt := range map[string]ironicTarget{
		"both":         {url: "http://127.0.0.1:1", config: conf},
		"neither":      {},
		"no url":       {config: noURL},
		"no such file": {config: filepath.Join(dir, "missing.conf")},
	} {
		if _, _, err := tgt.resolve(); exitCode(err) != upgradeBadArgs {
			t.Errorf("%s: %v (exit %d), want exit %d", name, err, exitCode(err), upgradeBadArgs)
		}
	}
}
