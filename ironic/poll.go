package ironic

import (
	"context"
	"strconv"
	"time"
)

// poll calls check every PollInterval until it reports done, fails with an error that is not
// transient, or ctx is done. last describes the latest observation for the timeout error.
func (c *Client) poll(ctx context.Context, call string, check func() (done bool, last string, err error)) error {
	// The first checks come sooner: most waits (an allocation, a state
	// change Ironic makes at once) end within a few tens of milliseconds,
	// and a worker waiting a whole interval for them is a worker idle.
	// The wait doubles up to PollInterval, so a long wait costs about
	// three requests more than polling at PollInterval from the start.
	wait := min(c.opts.PollInterval, firstPoll)
	t := time.NewTimer(wait)
	defer t.Stop()
	start := time.Now()
	var seen string
	for {
		done, last, err := check()
		if done {
			return nil
		}
		if last != "" {
			seen = last
		}
		if err != nil && !retryableWhilePolling(err) {
			return err
		}
		select {
		case <-ctx.Done():
			msg := "gave up after " + strconv.FormatFloat(time.Since(start).Seconds(), 'f', 1, 64) + "s"
			if seen != "" {
				msg += ", last seen " + seen
			}
			if err != nil {
				msg += ", last error: " + err.Error()
			}
			return &Error{Call: call, Fault: msg, Err: ctx.Err()}
		case <-t.C:
		}
		wait = min(2*wait, c.opts.PollInterval)
		t.Reset(wait)
	}
}

// firstPoll is the first wait of poll.
const firstPoll = 15 * time.Millisecond

func retryableWhilePolling(err error) bool {
	e, ok := err.(*Error)
	return ok && (e.Kind == ErrUnavailable || e.Kind == ErrNodeLocked)
}
