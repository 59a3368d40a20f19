package cluster

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

func TestEncodingSwitches(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{LogDir: dir}
	c.Attach("n1", "127.0.20.9", 1)
	c.Attach("n2", "127.0.20.10", 1) // no log: never started
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	log := `{"jepsen":"start 1 of n1"}
{"time":"2026-01-01T12:00:01.5Z","level":"INFO","msg":"log entries are written in json: the newest encoding every peer reads","peer":"n1","encoding":"json"}
{"time":"2026-01-01T12:00:02Z","level":"INFO","msg":"something else about log entries are written in msgpack","encoding":"msgpack"}
not json log entries are written in msgpack
{"time":"2026-01-01T12:01:10Z","level":"INFO","msg":"log entries are written in msgpack: the newest encoding every peer reads","peer":"n1","encoding":"msgpack"}
`
	if err := os.WriteFile(c.Agents[0].LogPath(), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := c.EncodingSwitches(start)
	if err != nil {
		t.Fatal(err)
	}
	want := []history.EncodingSwitch{{Agent: "n1", At: int64(1500 * time.Millisecond), Encoding: "json"},
		{Agent: "n1", At: int64(70 * time.Second), Encoding: "msgpack"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
