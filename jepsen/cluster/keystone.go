package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"io"
	"net/http"
	"os"
	"sort"
	"strings"
)

// Keystone is the control plane of scripts/openstack-up.sh as its env
// file describes it: the agents validate tokens as the service user, the
// workload's clients act as a member of a project.
type Keystone struct {
	AuthURL         string // e.g. http://127.0.0.1:5000/v3
	ServiceUser     string
	ServicePassword string
	ServiceProject  string
	User            string // the workload's member user
	Password        string
	Project         string
}

// ReadEnvFile parses KEY=VALUE lines (comments and blank lines skipped).
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not KEY=VALUE", path, line)
		}
		env[strings.TrimPrefix(strings.TrimSpace(k), "export ")] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return env, sc.Err()
}

// KeystoneFromEnv takes the control plane from openstack-up.sh's env file:
// the service user corral validates tokens, alice (member of demo-a)
// drives the workload.
func KeystoneFromEnv(env map[string]string) (*Keystone, error) {
	ks := &Keystone{AuthURL: env["OS_AUTH_URL"], ServiceUser: env["CORRAL_SERVICE_USERNAME"],
		ServicePassword: env["CORRAL_SERVICE_PASSWORD"], ServiceProject: env["SERVICE_PROJECT"],
		User: env["ALICE_USERNAME"], Password: env["ALICE_PASSWORD"], Project: env["ALICE_PROJECT"]}
	var missing []string
	for k, v := range map[string]string{"OS_AUTH_URL": ks.AuthURL, "CORRAL_SERVICE_USERNAME": ks.ServiceUser,
		"CORRAL_SERVICE_PASSWORD": ks.ServicePassword, "SERVICE_PROJECT": ks.ServiceProject,
		"ALICE_USERNAME": ks.User, "ALICE_PASSWORD": ks.Password, "ALICE_PROJECT": ks.Project} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the OpenStack env file lacks %s (written by scripts/openstack-up.sh)", strings.Join(missing, ", "))
	}
	ks.AuthURL = strings.TrimRight(ks.AuthURL, "/")
	return ks, nil
}

// Token issues a project-scoped token for the workload's user
// (POST /v3/auth/tokens, the token in X-Subject-Token).
func (ks *Keystone) Token(ctx context.Context, hc *http.Client) (string, error) {
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": ks.User, "domain": map[string]string{"name": "Default"}, "password": ks.Password}}},
		"scope": map[string]any{"project": map[string]any{"name": ks.Project, "domain": map[string]string{"name": "Default"}}},
	}}
	b, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ks.AuthURL+"/auth/tokens", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("Keystone token for %s: %w", ks.User, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("Keystone token for %s in %s: HTTP %d: %s", ks.User, ks.Project, resp.StatusCode, bytes.TrimSpace(msg))
	}
	tok := resp.Header.Get("X-Subject-Token")
	if tok == "" {
		return "", fmt.Errorf("Keystone answered no X-Subject-Token for %s", ks.User)
	}
	return tok, nil
}

// KeystoneFromFile reads the env file of scripts/openstack-up.sh
// (-openstack-env). A missing env file is not an error: the run goes on
// with static tokens and says why ("skip").
func KeystoneFromFile(path string) (*Keystone, string, error) {
	if path == "" {
		return nil, "OPENSTACK_ENV is not set: start a control plane with scripts/openstack-up.sh and set OPENSTACK_ENV (or -openstack-env) to the env file it prints", nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Sprintf("no OpenStack env file %s (%v): start the control plane with scripts/openstack-up.sh", path, err), nil
	}
	env, err := ReadEnvFile(path)
	if err != nil {
		return nil, "", err
	}
	ks, err := KeystoneFromEnv(env)
	return ks, "", err
}
