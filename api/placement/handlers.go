package placement

import "github.com/corral-dev/corral/api/core"

// Handlers serve the Placement subset.
type Handlers struct{ st *core.State }

// New returns Placement's handlers over st.
func New(st *core.State) *Handlers { return &Handlers{st: st} }
