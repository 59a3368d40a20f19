package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Features are parts of the state that a newer Apply keeps on commands
// an older peer applies too (a server's action history is kept on every
// create, delete and action), or that only newer commands write (server
// groups). Keeping such state while an older peer applies the same log
// would let the replicas differ, and a snapshot holding it would be one
// the older peer cannot read; so each feature is off until the leader
// enables it (EnableFeature) once every live peer knows the commands
// the feature needs (FeatureCommands), and stays on. A peer that was
// away and comes back older stops at the EnableFeature entry, as at any
// command it does not know.
const (
	// FeatureInstanceActions keeps each server's actions and their
	// events (history.go).
	FeatureInstanceActions = "instance_actions"
	// FeatureServerGroups allows server groups and the group scheduler
	// hint (server_group.go).
	FeatureServerGroups = "server_groups"
)

// FeatureCommands are the command types every live peer must know before
// the leader enables each feature.
var FeatureCommands = map[string][]CommandType{
	FeatureInstanceActions: {CmdEnableFeature},
	FeatureServerGroups:    {CmdEnableFeature, CmdCreateServerGroup, CmdDeleteServerGroup},
}

// EnableFeature turns a feature on for good. Enabling a feature that is
// on changes nothing.
type EnableFeature struct {
	Meta
	Name string `json:"name"`
}

// Type implements Command.
func (*EnableFeature) Type() CommandType { return CmdEnableFeature }

func init() {
	register[EnableFeature](CmdEnableFeature, "EnableFeature", applyEnableFeature)
	registerRecord(RecordFeatures, recordSpec{name: "features", write: writeFeaturesRecord, load: loadFeaturesRecord})
}

func applyEnableFeature(st *state, c *EnableFeature) (any, error) {
	if _, known := FeatureCommands[c.Name]; !known {
		return nil, fmt.Errorf("%w: feature %q is unknown", ErrInvalid, c.Name)
	}
	if st.features == nil {
		st.features = map[string]bool{}
	}
	st.features[c.Name] = true
	return nil, nil
}

func (st *state) featureOn(name string) bool { return st.features[name] }

// FeatureEnabled reports whether the feature is on.
func (s *Store) FeatureEnabled(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.featureOn(name)
}

// Features lists the features that are on, sorted.
func (s *Store) Features() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedKeys(s.st.features)
}

// featuresRecord is the one RecordFeatures record, written only while
// some feature is on: a snapshot without features stays one that older
// peers read.
type featuresRecord struct {
	On []string `json:"on"`
}

func writeFeaturesRecord(st *state, emit func(v any) error) error {
	if len(st.features) == 0 {
		return nil
	}
	return emit(featuresRecord{On: sortedKeys(st.features)})
}

func loadFeaturesRecord(st *state, body []byte) error {
	if st.features != nil {
		return fmt.Errorf("features appear twice")
	}
	var r featuresRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	st.features = map[string]bool{}
	for _, name := range r.On {
		if _, known := FeatureCommands[name]; !known {
			return fmt.Errorf("feature %q is unknown: the snapshot was written by a newer corral", name)
		}
		st.features[name] = true
	}
	if !slices.IsSorted(r.On) {
		return fmt.Errorf("features are not sorted")
	}
	return nil
}
