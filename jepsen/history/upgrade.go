package history

// Upgrade is the run's upgrade of a peer (-old-bin): the agent that
// started on an older release and was upgraded to the run's binary during
// the workload, and what the agents' logs said of the encoding of the log
// entries their leaders wrote.
type Upgrade struct {
	Agent string `json:"agent"`
	From  string `json:"from"` // the old binary's `corral version`
	// FromReadsMsgpack: the old release already lists msgpack among its
	// entry encodings, so no switch is expected at the upgrade.
	FromReadsMsgpack bool             `json:"from_reads_msgpack"`
	Switches         []EncodingSwitch `json:"encoding_switches"`
}

// EncodingSwitch is one "log entries are written in ..." line of an
// agent's log: from then on, the entries it writes as leader are in
// Encoding (json or msgpack).
type EncodingSwitch struct {
	Agent    string `json:"agent"`
	At       int64  `json:"at"` // nanoseconds since the start of the run
	Encoding string `json:"encoding"`
}
