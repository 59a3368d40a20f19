// Package history is what a run records and the files it keeps of it: the
// operations (an invocation and exactly one completion each, Op), recorded
// as they happen by a Recorder into history.jsonl; the fault windows, the
// final state read after the heal, the mass-boot waves and the simulator's
// side-effect log beside them; the index of a history by server that the
// checkers read; and the anomalies -inject-lost-ack and
// -inject-resurrection add to a history.
package history
