package cluster

import (
	"os"
	"strings"
	"testing"
)

func TestAgentConfigINI(t *testing.T) {
	if got := (AgentConfig{}).INI(); got != "" {
		t.Fatalf("empty config = %q, want nothing", got)
	}
	ks := &Keystone{AuthURL: "http://127.0.0.1:5020/v3", ServiceUser: "corral", ServicePassword: "pw", ServiceProject: "service"}
	got := AgentConfig{CA: "/p/ca.pem", Cert: "/p/n1.pem", Key: "/p/n1-key.pem", GossipKey: "KEY=", Keystone: ks, PeerToken: "tok"}.INI()
	for _, want := range []string{
		"[auth]\nstrategy = keystone\npeer_token = tok\n",
		"[gossip]\nencrypt = KEY=\n",
		"[keystone_authtoken]\nauth_url = http://127.0.0.1:5020/v3\n",
		"username = corral\npassword = pw\nproject_name = service\n",
		"[tls]\nca_file = /p/ca.pem\ncert_file = /p/n1.pem\nkey_file = /p/n1-key.pem\nverify_incoming = true\nverify_outgoing = true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "[auth]") > strings.Index(got, "[tls]") {
		t.Errorf("sections not in a fixed order:\n%s", got)
	}
	if gossipOnly := (AgentConfig{GossipKey: "K"}).INI(); strings.Contains(gossipOnly, "[tls]") || strings.Contains(gossipOnly, "[auth]") {
		t.Errorf("gossip-only config has more: %s", gossipOnly)
	}
}

func TestSetGossipKeyRewritesEveryConfig(t *testing.T) {
	dir := t.TempDir()
	cl := &Cluster{Dir: dir, Token: "tok"}
	for _, n := range []string{"n1", "n2"} {
		cl.Agents = append(cl.Agents, &Agent{Name: n, cl: cl})
	}
	if err := cl.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetGossipKey("NEWKEY"); err != nil {
		t.Fatal(err)
	}
	for _, a := range cl.Agents {
		b, err := os.ReadFile(a.ConfPath())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "encrypt = NEWKEY") {
			t.Errorf("%s: %s", a.Name, b)
		}
		if st, _ := os.Stat(a.ConfPath()); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600 (it holds the key)", a.Name, st.Mode())
		}
	}
	if a := cl.Agents[0]; !strings.HasPrefix(a.URL(), "http://") {
		t.Errorf("URL without TLS = %s", a.URL())
	}
	cl.PKI = &PKI{}
	if a := cl.Agents[0]; !strings.HasPrefix(a.URL(), "https://") {
		t.Errorf("URL with TLS = %s", a.URL())
	}
}
