package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The parsers of option values: each returns the option's setter, which
// checks the value and stores it in the configuration.

func str(p func(c *agentConfig) *string) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error { *p(c) = strings.TrimSpace(v); return nil }
}

func integer(p func(c *agentConfig) *int, min, max int) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if n < min || n > max {
			return fmt.Errorf("%d is out of range %d-%d", n, min, max)
		}
		*p(c) = n
		return nil
	}
}

func uinteger(p func(c *agentConfig) *uint64) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil || n == 0 {
			return fmt.Errorf("%q is not a positive integer", v)
		}
		*p(c) = n
		return nil
	}
}

// deletedRetention sets deleted_retention: a positive duration, or off.
func deletedRetention(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.DeletedRetention = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.DeletedRetention })(c, v)
}

func deployWait(c *agentConfig, v string) error {
	switch v = strings.TrimSpace(v); v {
	case "watch", "poll":
		c.Ironic.DeployWait = v
		return nil
	}
	return fmt.Errorf("%q is not watch (one watcher per host, the default) or poll (a worker per deploy)", v)
}

// orphanGrace sets [ironic] orphan_grace: a positive duration, or off.
func orphanGrace(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.Ironic.OrphanGrace = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.Ironic.OrphanGrace })(c, v)
}

func int64Option(p func(c *agentConfig) *int64, min, max int64) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < min || n > max {
			return fmt.Errorf("%q is not an integer in %d-%d", v, min, max)
		}
		*p(c) = n
		return nil
	}
}

// refusedGrace sets [failover] refused_grace: a positive duration, or off.
func refusedGrace(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.Failover.RefusedGrace = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.Failover.RefusedGrace })(c, v)
}

// silentGrace sets [failover] silent_grace: a positive duration, or off.
func silentGrace(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.Failover.SilentGrace = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.Failover.SilentGrace })(c, v)
}

// deadServerCleanup sets [raft] dead_server_cleanup_after: a positive duration, or off.
func deadServerCleanup(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.DeadServerCleanupAfter = -1
		return nil
	}
	return duration(func(c *agentConfig) *time.Duration { return &c.DeadServerCleanupAfter })(c, v)
}

// writeRate sets [api] write_rate: a positive number, or off.
func writeRate(c *agentConfig, v string) error {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		c.Limits.WriteRate = 0
		return nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f <= 0 {
		return fmt.Errorf("%q is not a positive number of writes per second, or off", v)
	}
	c.Limits.WriteRate = f
	return nil
}

func duration(p func(c *agentConfig) *time.Duration) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 500ms or 2s", v)
		}
		if d <= 0 {
			return fmt.Errorf("%q must be positive", v)
		}
		*p(c) = d
		return nil
	}
}

func fraction(p func(c *agentConfig) *float64) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("%q is not a number in (0, 1]", v)
		}
		*p(c) = f
		return nil
	}
}

func ratio(p func(c *agentConfig) *float64) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f > 1000 {
			return fmt.Errorf("%q is not a ratio in (0, 1000]", v)
		}
		*p(c) = f
		return nil
	}
}

func boolean(p func(c *agentConfig) *bool) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*p(c) = b
		return nil
	}
}

func list(p func(c *agentConfig) *[]string) func(*agentConfig, string) error {
	return func(c *agentConfig, v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*p(c) = append(*p(c), s)
			}
		}
		return nil
	}
}
