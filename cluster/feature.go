package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/corral-dev/corral/fsm"
)

// enableFeatures turns on, once, each fsm feature whose command types
// every live peer advertises (fsm.FeatureCommands): before then an older
// peer would apply the same log without keeping what the feature keeps.
func (n *Node) enableFeatures(ctx context.Context) error {
	names := make([]string, 0, len(fsm.FeatureCommands))
	for name := range fsm.FeatureCommands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if n.store.FeatureEnabled(name) || !n.commandsKnown(fsm.FeatureCommands[name]) {
			continue
		}
		if _, err := n.applyLocal(ctx, &fsm.EnableFeature{Name: name}); err != nil {
			return fmt.Errorf("enable feature %s: %w", name, err)
		}
		n.log.Info("feature enabled: every peer knows its commands", "feature", name)
	}
	return nil
}

func (n *Node) commandsKnown(types []fsm.CommandType) bool {
	for _, t := range types {
		if !n.CommandKnown(t) {
			return false
		}
	}
	return true
}
