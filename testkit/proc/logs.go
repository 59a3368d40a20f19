package proc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
)

// Tail returns the last n bytes of the file at path (all of it when
// shorter); "" when it does not exist.
func Tail(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return "", err
		}
	}
	b, err := io.ReadAll(f)
	return string(b), err
}

// raceMarker starts every report of Go's race detector.
const raceMarker = "WARNING: DATA RACE"

// DataRaces returns the race detector's reports in the log at path: each
// from its "WARNING: DATA RACE" line to the closing "==================".
// A log that does not exist has none.
func DataRaces(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, raceMarker):
			cur = &strings.Builder{}
			cur.WriteString(line + "\n")
		case cur != nil && strings.HasPrefix(line, "=================="):
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if cur != nil {
		out = append(out, cur.String())
	}
	return out, sc.Err()
}
