package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDocumentsEveryOption keeps the configuration reference complete.
func TestReadmeDocumentsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, o := range options {
		row := "| " + o.section + " | `" + o.key + "` |"
		if !strings.Contains(readme, row) {
			t.Errorf("README.md has no configuration row for [%s] %s", o.section, o.key)
		}
		if o.flag != "" && !strings.Contains(readme, "`--"+o.flag+"`") {
			t.Errorf("README.md does not mention --%s", o.flag)
		}
	}
}
