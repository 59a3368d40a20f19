package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger gives raft an hclog logger that writes into logger, at the
// level logger is configured for (the agent's log_level).
func newHCLogger(logger *slog.Logger, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclogLevel(logger),
		JSONFormat: true,
		Output:     &slogWriter{log: logger},
	})
}

// hclogLevel is the lowest hclog level logger has enabled, so that raft
// formats nothing that would be dropped and drops nothing that would not.
func hclogLevel(logger *slog.Logger) hclog.Level {
	ctx := context.Background()
	switch {
	case logger.Enabled(ctx, slog.LevelDebug-4):
		return hclog.Trace
	case logger.Enabled(ctx, slog.LevelDebug):
		return hclog.Debug
	case logger.Enabled(ctx, slog.LevelInfo):
		return hclog.Info
	case logger.Enabled(ctx, slog.LevelWarn):
		return hclog.Warn
	}
	return hclog.Error
}

// slogWriter turns hclog's JSON lines into slog records, so raft logs
// in the same structured stream as the rest of corral.
type slogWriter struct{ log *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			w.log.Info(string(line))
			continue
		}
		lvl := slog.LevelInfo
		switch rec["@level"] {
		case "trace":
			lvl = slog.LevelDebug - 4
		case "debug":
			lvl = slog.LevelDebug
		case "warn":
			lvl = slog.LevelWarn
		case "error":
			lvl = slog.LevelError
		}
		msg, _ := rec["@message"].(string)
		attrs := make([]any, 0, 2*len(rec))
		if mod, ok := rec["@module"]; ok {
			attrs = append(attrs, "component", mod)
		}
		for k, v := range rec {
			if len(k) > 0 && k[0] == '@' {
				continue
			}
			attrs = append(attrs, k, v)
		}
		w.log.Log(context.Background(), lvl, msg, attrs...)
	}
	return len(p), nil
}

// newMemberlistLogger gives memberlist a standard logger whose lines,
// "[WARN] memberlist: ..." and the like, become slog records at the level
// of their prefix.
func newMemberlistLogger(logger *slog.Logger) *log.Logger {
	return log.New(&levelPrefixWriter{log: logger}, "", 0)
}

// levelPrefixWriter parses the level prefix memberlist puts on each line.
type levelPrefixWriter struct{ log *slog.Logger }

// memberlistLevels maps memberlist's prefixes to slog levels.
var memberlistLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERR":   slog.LevelError,
	"ERROR": slog.LevelError,
}

func (w *levelPrefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		lvl, msg := parseLevelPrefix(line)
		w.log.Log(context.Background(), lvl, msg)
	}
	return len(p), nil
}

// parseLevelPrefix splits "[WARN] memberlist: text" into a level and
// "text". A line without a known prefix is logged at info.
func parseLevelPrefix(line string) (slog.Level, string) {
	lvl := slog.LevelInfo
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "["); ok {
		if name, msg, ok := strings.Cut(rest, "]"); ok {
			if l, known := memberlistLevels[name]; known {
				lvl, line = l, strings.TrimSpace(msg)
			}
		}
	}
	return lvl, strings.TrimPrefix(line, "memberlist: ")
}
