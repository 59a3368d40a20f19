package main

import (
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// TestDeployExamplesLoad keeps deploy/examples valid.
func TestDeployExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../deploy/examples/*.conf")
	if err != nil || len(files) != 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		registerAgentFlags(fs)
		if err := fs.Parse([]string{"--config", f}); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadAgentConfig(fs, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if cfg.BootstrapExpect != 3 || len(cfg.Join) != 3 || len(cfg.AdminTokens) != 1 || cfg.PeerToken == "" {
			t.Fatalf("%s loaded as %+v", f, cfg)
		}
	}
}
