package history

// Window is one fault, from injection to heal, in nanoseconds since the
// start of the run. Error says why the fault was not (fully) injected,
// HealError why it was not (fully) undone: either makes the run invalid,
// since the history was not recorded under the faults the report names.
type Window struct {
	Name      string `json:"name"`
	Detail    string `json:"detail"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	Error     string `json:"error,omitempty"`
	HealError string `json:"heal_error,omitempty"`
}
