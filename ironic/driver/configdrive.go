package driver

import (
	"encoding/base64"

	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
)

// configDrive is the config drive of a server's deployment, in the form
// Ironic builds into the node's config-drive partition: meta_data as Nova
// writes it (uuid, name, hostname, the key pair in public_keys and keys,
// the server's metadata in meta, its launch index, and admin_pass when
// the create or rebuild gave a password) and the user data decoded. network_data
// is left to Ironic, which writes it from the node's ports and the VIFs
// attached before the deploy. cloud-init on the node reads all three.
func configDrive(s fsm.Server) *ironic.ConfigDrive {
	meta := map[string]any{
		"uuid": s.ID, "name": s.Name, "hostname": s.Hostname(),
		"launch_index": s.LaunchIndex, "availability_zone": "nova", "project_id": s.Project(),
		"meta": map[string]string{},
	}
	if len(s.Metadata) > 0 {
		meta["meta"] = s.Metadata
	}
	if s.KeyName != "" && s.KeyData != "" {
		meta["public_keys"] = map[string]string{s.KeyName: s.KeyData}
		meta["keys"] = []map[string]string{{"name": s.KeyName, "type": "ssh", "data": s.KeyData}}
	}
	if s.AdminPass != "" {
		meta["admin_pass"] = s.AdminPass
	}
	cd := &ironic.ConfigDrive{MetaData: meta}
	if s.UserData != "" {
		// The API accepted only valid base64 that decodes to text.
		if raw, err := base64.StdEncoding.DecodeString(s.UserData); err == nil {
			cd.UserData = string(raw)
		}
	}
	return cd
}
