// Package keystone validates OpenStack Keystone tokens the way keystonemiddleware's auth_token filter
// does: with a service user's own token it asks Keystone (GET /v3/auth/tokens) whether a caller's token
// is valid, and answers with the caller's identity (user, project, domain, roles, expiry).
//
// It owns: the options an operator knows from a [keystone_authtoken] section, the service token
// (ServiceToken: password authentication, renewed before it expires and when Keystone or another
// service refuses it; corral also presents one to Glance for callers without a Keystone token), a cache of valid
// answers bounded by token_cache_time and by each token's expiry, the coalescing of concurrent
// validations of one token into a single Keystone request, and the split between a token that is not
// valid (ErrInvalidToken: an API answers 401 with the WWW-Authenticate value) and a Keystone that cannot
// answer (ErrUnavailable: an API answers 503).
//
// It speaks HTTP with net/http only and imports nothing from corral; it must not import api, cluster,
// fsm, echo or gophercloud.
package keystone
