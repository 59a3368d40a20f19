package nova

import (
	"net/url"
	"time"

	"github.com/corral-dev/corral/api/core"
)

// isoTimeLayouts are the ISO 8601 forms Nova's date-time format takes: a
// time with or without its offset (UTC when it has none) and fractions,
// or a date.
var isoTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

// timeQuery is the query parameter name as a time (zero when it is
// absent), or Nova's 400 for a value that is not an ISO 8601 time.
func timeQuery(q url.Values, name string) (time.Time, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return time.Time{}, nil
	}
	for _, layout := range isoTimeLayouts {
		if t, err := time.Parse(layout, v[0]); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, core.BadRequest("Invalid input for query parameters %s. Value: %s. '%s' is not a 'date-time'", name, v[0], v[0])
}
