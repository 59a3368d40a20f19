package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the corral command line with args and returns its output.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// makePKI creates a CA and a peer certificate for 127.0.0.2 in a new directory.
func makePKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := runCLI(t, "tls", "ca", "create", "--dir", dir); err != nil {
		t.Fatalf("tls ca create: %v\n%s", err, out)
	}
	ca, key := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if out, err := runCLI(t, "tls", "cert", "create", "--dir", dir, "--ca", ca, "--ca-key", key, "--name", "peer1", "--ip", "127.0.0.2"); err != nil {
		t.Fatalf("tls cert create: %v\n%s", err, out)
	}
	return dir
}

func tlsINI(dir, ca, cert, key string) string {
	return "[tls]\nca_file = " + filepath.Join(dir, ca) + "\ncert_file = " + filepath.Join(dir, cert) + "\nkey_file = " + filepath.Join(dir, key) + "\nverify_incoming = true\n"
}

func TestTLSCreateAndConfig(t *testing.T) {
	dir := makePKI(t)
	// The CA's key stays private.
	st, err := os.Stat(filepath.Join(dir, caKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key mode: %v %v", st, err)
	}
	// Nothing is overwritten.
	if _, err := runCLI(t, "tls", "ca", "create", "--dir", dir); err == nil || !strings.Contains(err.Error(), "file exists") {
		t.Fatalf("second ca create: %v", err)
	}
	c := mustLoad(t, []string{"--name", "peer1", "--config", writeConfig(t, tlsINI(dir, caCertFile, "peer1.pem", "peer1-key.pem"))}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
	cc := c.clusterConfig()
	if cc.TLS == nil || !cc.TLS.Files().VerifyIncoming || !cc.TLS.Files().VerifyOutgoing {
		t.Fatalf("TLS not carried into the cluster configuration: %+v", cc.TLS)
	}
}

func TestTLSConfigRefusesBadFiles(t *testing.T) {
	dir := makePKI(t)
	other := makePKI(t)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ini string
		want      []string
	}{
		{"wrong CA", tlsINI(dir, "", "peer1.pem", "peer1-key.pem") + "ca_file = " + filepath.Join(other, caCertFile) + "\n",
			[]string{"not signed by the CA in ca_file " + filepath.Join(other, caCertFile)}},
		{"malformed key", tlsINI(dir, caCertFile, "peer1.pem", "garbage.pem"), []string{"key_file " + garbage, "no PEM private key"}},
		{"malformed cert", tlsINI(dir, caCertFile, "garbage.pem", "peer1-key.pem"), []string{"cert_file " + garbage, "no PEM CERTIFICATE"}},
		{"key only", "[tls]\nkey_file = " + filepath.Join(dir, "peer1-key.pem") + "\n", []string{"ca_file is not set", "cert_file is not set"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, []string{"--config", writeConfig(t, tc.ini)}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestCLIRefusesBadClientTLSEnv(t *testing.T) {
	dir := makePKI(t)
	t.Setenv("CORRAL_CACERT", filepath.Join(dir, "peer1-key.pem"))
	_, err := runCLI(t, "members")
	if err == nil || !strings.Contains(err.Error(), "peer1-key.pem") || exitCode(err) != 2 {
		t.Fatalf("a key given as CORRAL_CACERT: %v", err)
	}
}
