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
	// The control plane's admin (OS_USERNAME, ...), whom the suite reads
	// Neutron as (-neutron); empty when the env file has none.
	AdminUser     string
	AdminPassword string
	AdminProject  string
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
		User: env["ALICE_USERNAME"], Password: env["ALICE_PASSWORD"], Project: env["ALICE_PROJECT"],
		AdminUser: env["OS_USERNAME"], AdminPassword: env["OS_PASSWORD"], AdminProject: env["OS_PROJECT_NAME"]}
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
	t, err := ks.Issue(ctx, hc, ks.User, ks.Password, ks.Project)
	return t.Value, err
}

// AdminToken issues a token of the control plane's admin in its project.
func (ks *Keystone) AdminToken(ctx context.Context, hc *http.Client) (string, error) {
	if ks.AdminUser == "" || ks.AdminPassword == "" || ks.AdminProject == "" {
		return "", fmt.Errorf("the OpenStack env file names no admin (OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME)")
	}
	t, err := ks.Issue(ctx, hc, ks.AdminUser, ks.AdminPassword, ks.AdminProject)
	return t.Value, err
}

// Token is a Keystone token and the project it is scoped to.
type Token struct {
	Value     string
	ProjectID string
}

// Issue issues a token of user, scoped to project (both in the Default
// domain).
func (ks *Keystone) Issue(ctx context.Context, hc *http.Client, user, password, project string) (Token, error) {
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": user, "domain": map[string]string{"name": "Default"}, "password": password}}},
		"scope": map[string]any{"project": map[string]any{"name": project, "domain": map[string]string{"name": "Default"}}},
	}}
	b, err := json.Marshal(body)
	if err != nil {
		return Token{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ks.AuthURL+"/auth/tokens", bytes.NewReader(b))
	if err != nil {
		return Token{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("Keystone token for %s: %w", user, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return Token{}, fmt.Errorf("Keystone token for %s in %s: HTTP %d: %.300s", user, project, resp.StatusCode, bytes.TrimSpace(msg))
	}
	t := Token{Value: resp.Header.Get("X-Subject-Token")}
	if t.Value == "" {
		return Token{}, fmt.Errorf("Keystone answered no X-Subject-Token for %s", user)
	}
	var tb struct {
		Token struct {
			Project struct {
				ID string `json:"id"`
			} `json:"project"`
		} `json:"token"`
	}
	if json.Unmarshal(msg, &tb) == nil {
		t.ProjectID = tb.Token.Project.ID
	}
	return t, nil
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
