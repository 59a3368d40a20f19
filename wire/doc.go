// Package wire holds the request and response types of corral's HTTP API
// and the paths they travel on: the bodies of the native /v1 admin API,
// the request bodies of the Nova-compatible compute API, Nova's flavor
// view, and the part of Nova's server view corral's own programs read.
// api serves them; client, the CLI and the upgrade tool send and decode
// them, so that each is declared once; any black-box program (the jepsen
// suite) may import them too.
//
// Nova's other views (servers, hypervisors, services, Placement's
// providers) change with the microversion and stay with the handlers that
// render them (api/nova, api/placement).
//
// wire imports nothing but the standard library (archtest holds it to
// that), so that any program can use it.
package wire
