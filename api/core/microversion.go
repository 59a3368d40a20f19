package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Microversion is an OpenStack API microversion, MAJOR.MINOR.
type Microversion struct{ Major, Minor int }

// ParseMicroversion parses MAJOR.MINOR.
func ParseMicroversion(s string) (Microversion, error) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok {
		return Microversion{}, fmt.Errorf("microversion %q is not MAJOR.MINOR", s)
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return Microversion{}, fmt.Errorf("microversion %q is not MAJOR.MINOR", s)
	}
	return Microversion{a, b}, nil
}

// Less reports whether v is older than o.
func (v Microversion) Less(o Microversion) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

func (v Microversion) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }
