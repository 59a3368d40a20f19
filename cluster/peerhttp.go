package cluster

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/corral-dev/corral/cluster/tlsutil"
)

// AuthenticatePeer tells whether r comes from a peer, for the peers'
// endpoints (/v1/internal/...): with TLS, its connection presented a
// certificate, verified against the CA, that names a peer (the name is
// returned); without TLS, it carries the peer token. A user's credential
// never passes: not a static token, not a Keystone token, not a client
// certificate. The error wraps ErrNotPeer.
func (n *Node) AuthenticatePeer(r *http.Request) (string, error) {
	if n.cfg.TLS != nil {
		peer, err := tlsutil.PeerOf(r.TLS)
		if err != nil {
			return "", fmt.Errorf("%w: with TLS, a peer presents its peer certificate (%w)", ErrNotPeer, err)
		}
		return peer, nil
	}
	if !n.IsPeerToken(r.Header.Get("X-Auth-Token")) {
		return "", fmt.Errorf("%w: the request does not carry the peer token", ErrNotPeer)
	}
	return "", nil
}

// IsPeerToken reports whether tok is this cluster's peer token, which is
// no user's credential: the API refuses it on every other route.
func (n *Node) IsPeerToken(tok string) bool {
	return n.cfg.PeerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(n.cfg.PeerToken)) == 1
}

// PeerAPIs returns the API address of every live admitted member, this
// peer included, by name.
func (n *Node) PeerAPIs() map[string]string {
	out := map[string]string{}
	for _, m := range n.counted(n.gossip.snapshot()) {
		if m.Status == MemberAlive && m.Meta.APIAddr != "" {
			out[m.Name] = m.Meta.APIAddr
		}
	}
	return out
}

// CallPeer sends a JSON request to another peer's API (host:port) with
// the peers' token, over HTTPS when TLS is on.
func (n *Node) CallPeer(ctx context.Context, api, method, path string, in, out any) error {
	return n.peers.Call(ctx, api, method, path, in, out)
}
