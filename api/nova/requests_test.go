package nova

import (
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/wire"
)

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}

// What corral's own clients send (wire) the handlers read: every field of
// wire's request types is a field of this package's.
func TestRequestsReadWhatClientsSend(t *testing.T) {
	for _, c := range []struct{ wire, here any }{
		{wire.FlavorCreateRequest{}, flavorCreateRequest{}},
		{wire.FlavorCreate{}, flavorCreate{}},
		{wire.ServerCreateRequest{}, serverCreateRequest{}},
		{wire.ServerCreate{}, serverCreateIn{}},
		{wire.ServerNetwork{}, bootNetwork{}},
		{wire.ServerUpdateRequest{}, serverUpdateRequest{}},
		{wire.ServerUpdate{}, serverUpdateIn{}},
		{wire.RebuildAction{}, rebuildAction{}},
	} {
		here := jsonFields(c.here)
		for f := range jsonFields(c.wire) {
			if !here[f] {
				t.Errorf("%T has no field %q of %T", c.here, f, c.wire)
			}
		}
	}
}
