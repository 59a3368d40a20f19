package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// jsonLogger logs JSON lines at level and above into buf.
func jsonLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level}))
}

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

func TestMemberlistLevelsBecomeSlogLevels(t *testing.T) {
	cases := []struct {
		line, level, msg string
	}{
		{"[WARN] memberlist: Was able to connect to p2 over TCP but UDP probes failed", "WARN", "Was able to connect to p2 over TCP but UDP probes failed"},
		{"[ERR] memberlist: Failed to send ping: write: connection refused", "ERROR", "Failed to send ping: write: connection refused"},
		{"[ERROR] memberlist: something broke", "ERROR", "something broke"},
		{"[INFO] memberlist: Suspect p3 has failed, no acks received", "INFO", "Suspect p3 has failed, no acks received"},
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:4000", "DEBUG", "Stream connection from=127.0.0.1:4000"},
		{"no prefix at all", "INFO", "no prefix at all"},
		{"[NOTICE] memberlist: unknown level", "INFO", "[NOTICE] memberlist: unknown level"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		newMemberlistLogger(jsonLogger(&buf, slog.LevelDebug)).Println(tc.line)
		recs := records(t, &buf)
		if len(recs) != 1 {
			t.Fatalf("%q: %d records, want 1", tc.line, len(recs))
		}
		if recs[0]["level"] != tc.level || recs[0]["msg"] != tc.msg {
			t.Errorf("%q logged as %v %q, want %s %q", tc.line, recs[0]["level"], recs[0]["msg"], tc.level, tc.msg)
		}
	}
}

func TestMemberlistDebugDroppedAtInfo(t *testing.T) {
	var buf bytes.Buffer
	l := newMemberlistLogger(jsonLogger(&buf, slog.LevelInfo))
	l.Println("[DEBUG] memberlist: chatter")
	l.Println("[WARN] memberlist: worth seeing")
	recs := records(t, &buf)
	if len(recs) != 1 || recs[0]["msg"] != "worth seeing" {
		t.Fatalf("records %v, want only the warning", recs)
	}
}

func TestRaftLogLevelFollowsTheLogger(t *testing.T) {
	for lvl, want := range map[slog.Level]hclog.Level{
		slog.LevelDebug - 4: hclog.Trace,
		slog.LevelDebug:     hclog.Debug,
		slog.LevelInfo:      hclog.Info,
		slog.LevelWarn:      hclog.Warn,
		slog.LevelError:     hclog.Error,
	} {
		var buf bytes.Buffer
		hl := newHCLogger(jsonLogger(&buf, lvl), "raft")
		if got := hl.GetLevel(); got != want {
			t.Errorf("slog level %s: hclog level %s, want %s", lvl, got, want)
		}
	}
	var buf bytes.Buffer
	hl := newHCLogger(jsonLogger(&buf, slog.LevelDebug), "raft")
	hl.Debug("entering follower state", "term", 3)
	recs := records(t, &buf)
	if len(recs) != 1 || recs[0]["level"] != "DEBUG" || recs[0]["msg"] != "entering follower state" || recs[0]["component"] != "raft" {
		t.Fatalf("raft debug line at debug level: %v", recs)
	}
}
