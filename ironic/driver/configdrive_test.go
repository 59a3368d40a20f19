package driver_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic/driver"
	"github.com/corral-dev/corral/ironic/sim"
)

func TestDeployCarriesConfigDrive(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond})
	w.sim.SeedNodes(1, "baremetal-gold")
	w.waitMirror(1)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	const pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID2S6HUhRL4srmCu+1n4Z7ODHe0isDXOR3Z2Gaq508qn test@corral"
	if err := w.propose(&fsm.CreateKeyPair{KeyPair: fsm.KeyPair{UserID: "u1", Name: "laptop", Type: fsm.KeyTypeSSH,
		PublicKey: pub, Fingerprint: "42:80"}}); err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	if err := w.propose(&fsm.CreateServer{ID: id, Name: "DB Primary_1", FlavorID: "gold", ImageRef: "img",
		ProjectID: "p1", UserID: "u1", KeyName: "laptop", UserData: "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6IFtscl0K",
		Metadata: map[string]string{"role": "db"}}); err != nil {
		t.Fatal(err)
	}
	s := w.waitStatus(id, fsm.StatusActive)
	raw := w.sim.ConfigDrive(s.NodeUUID)
	var cd struct {
		MetaData struct {
			UUID       string            `json:"uuid"`
			Name       string            `json:"name"`
			Hostname   string            `json:"hostname"`
			ProjectID  string            `json:"project_id"`
			PublicKeys map[string]string `json:"public_keys"`
			Meta       map[string]string `json:"meta"`
		} `json:"meta_data"`
		UserData    string          `json:"user_data"`
		NetworkData json.RawMessage `json:"network_data"`
	}
	if err := json.Unmarshal(raw, &cd); err != nil {
		t.Fatalf("config drive %q: %v", raw, err)
	}
	m := cd.MetaData
	if m.UUID != id || m.Name != "DB Primary_1" || m.Hostname != "db-primary-1" || m.ProjectID != "p1" ||
		m.PublicKeys["laptop"] != pub || m.Meta["role"] != "db" {
		t.Fatalf("meta_data %+v", m)
	}
	if cd.UserData != "#cloud-config\nruncmd: [lr]\n" {
		t.Fatalf("user_data %q", cd.UserData)
	}
	if cd.NetworkData != nil {
		t.Fatalf("network_data is Ironic's to write: %s", cd.NetworkData)
	}
}

// A boot request's admin password reaches the node in meta_data
// admin_pass, as Nova's Ironic driver writes it, and the replicated state
// forgets it once the server is deployed.
func TestDeployCarriesAdminPass(t *testing.T) {
	w := newWorld(t, 1, driver.ReserveAuto, sim.Options{DeployDelay: 20 * time.Millisecond})
	w.sim.SeedNodes(2, "baremetal-gold")
	w.waitMirror(2)
	w.flavor("gold", "CUSTOM_BAREMETAL_GOLD", nil)
	set := fsm.ServerSet{ReservationID: "r-0000000a", MinCount: 2, AdminPass: "Zx8pQ2mN4vK7",
		Server:  fsm.CreateServer{Name: "web", FlavorID: "gold", ImageRef: "img", ProjectID: "p1", UserID: "u1"},
		Members: []fsm.SetMember{{ID: uuid.NewString()}, {ID: uuid.NewString()}}}
	if err := w.propose(&fsm.CreateServerSets{Sets: []fsm.ServerSet{set}}); err != nil {
		t.Fatal(err)
	}
	for i, m := range set.Members {
		s := w.waitStatus(m.ID, fsm.StatusActive)
		var cd struct {
			MetaData struct {
				AdminPass   string `json:"admin_pass"`
				LaunchIndex int    `json:"launch_index"`
			} `json:"meta_data"`
		}
		if err := json.Unmarshal(w.sim.ConfigDrive(s.NodeUUID), &cd); err != nil {
			t.Fatal(err)
		}
		if cd.MetaData.AdminPass != set.AdminPass || cd.MetaData.LaunchIndex != i {
			t.Fatalf("server %d: meta_data %+v", i, cd.MetaData)
		}
		if s.AdminPass != "" {
			t.Fatalf("server %d is active and its password still replicated", i)
		}
	}
}
