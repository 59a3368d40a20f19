// Package workload drives corral's API while the nemesis strikes, and
// records every operation in the history. Ops (ops.go) is what every
// workload runs on: it sends one boot, delete, show or list through a
// peer, records its invocation and its completion, and keeps the pool of
// servers the clients know. Each workload is one file: Mixed (mixed.go),
// MassBoot (massboot.go) and Actions (actions.go). A new workload is a
// type with a Run(ctx) method on an Ops, in a file of its own; the command
// picks it by its -workload name.
package workload
