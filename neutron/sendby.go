package neutron

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// ErrNotSent: a request made under a send deadline (WithSendBy) was not
// written to Neutron (or Keystone) before that deadline, so it was not
// made at all: Neutron never saw it.
var ErrNotSent = errors.New("neutron: not sent before the send deadline")

type sendByKey struct{}

// WithSendBy returns ctx under which the client's requests must be
// written by deadline: one not yet started then is refused (ErrNotSent),
// one not yet fully written then is abandoned. A request written in time
// is waited for as any other, up to the client's timeout: what bounds a
// side effect in time is when it was sent, not when Neutron answers. A
// request Neutron has received is carried out even when its caller gives
// up on the answer (a port create queued behind others in a busy Neutron
// commits minutes later), so abandoning it at the deadline would only
// lose the answer and make the caller create again.
func WithSendBy(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, sendByKey{}, deadline)
}

// SendBy is the send deadline of ctx, if it has one.
func SendBy(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(sendByKey{}).(time.Time)
	return t, ok
}

// sendGate is the client's transport: it holds each request made under a
// send deadline to it.
type sendGate struct{ next http.RoundTripper }

func (g sendGate) RoundTrip(req *http.Request) (*http.Response, error) {
	by, ok := SendBy(req.Context())
	if !ok {
		return g.next.RoundTrip(req)
	}
	wait := time.Until(by)
	if wait <= 0 {
		return nil, fmt.Errorf("%w (%s %s, %s late)", ErrNotSent, req.Method, req.URL.Redacted(), (-wait).Round(time.Millisecond))
	}
	var wrote atomic.Bool
	ctx, cancel := context.WithCancelCause(req.Context())
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	t := time.AfterFunc(wait, func() {
		if !wrote.Load() {
			cancel(fmt.Errorf("%w (%s %s)", ErrNotSent, req.Method, req.URL.Redacted()))
		}
	})
	resp, err := g.next.RoundTrip(req.WithContext(ctx))
	t.Stop()
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrNotSent) {
			return nil, cause
		}
		cancel(nil)
		return nil, err
	}
	// The body is read under ctx: released when the caller closes it.
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
