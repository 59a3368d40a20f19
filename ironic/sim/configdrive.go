package sim

import (
	"encoding/json"
	"slices"
)

// ConfigDrive returns the config drive the node's current deployment was
// asked for, as the provision request carried it (a JSON object, or a
// JSON string for a prebuilt image), or nil. Ironic's API shows it only
// masked; tests read the content here.
func (s *Server) ConfigDrive(nodeUUID string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes.byUUID[nodeUUID]
	if n == nil {
		return nil
	}
	return slices.Clone(n.configDrive)
}
