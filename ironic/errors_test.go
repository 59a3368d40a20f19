package ironic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

func TestFaultString(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"Node x could not be found.\", \"debuginfo\": null}"}`,
			"Node x could not be found."},
		{`{"error_message": "{\"code\": 405, \"title\": \"Method Not Allowed\", \"description\": \"The API version does not allow allocations\"}"}`,
			"The API version does not allow allocations"},
		{`{"error_message": "{\"code\": 404, \"title\": \"Not Found\", \"description\": \"\"}"}`, "Not Found"},
		{`{"error_message": {"faultstring": "already an object"}}`, "already an object"},
		{`{"error_message": "plain text"}`, "plain text"},
		{`<html>Bad Gateway</html>`, "<html>Bad Gateway</html>"},
		{`{"other": 1}`, `{"other": 1}`},
		{``, ``},
	} {
		if got := faultString([]byte(tc.body)); got != tc.want {
			t.Errorf("faultString(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestClassifyError(t *testing.T) {
	body := func(msg string) []byte {
		return []byte(`{"error_message": "{\"faultcode\": \"Client\", \"faultstring\": \"` + msg + `\", \"debuginfo\": null}"}`)
	}
	for _, tc := range []struct {
		status int
		msg    string
		kind   error
	}{
		{404, "Allocation a could not be found.", ErrNotFound},
		{409, "Node u is locked by host h, please retry after the current operation is completed.", ErrNodeLocked},
		{409, "Node u is associated with instance i.", ErrConflict},
		{400, "Invalid", ErrInvalid},
		{405, "The API version does not allow allocations", ErrUnsupported},
		{406, "Request not acceptable.", ErrUnsupported},
		{503, "Injected fault.", ErrUnavailable},
		{500, "Cannot backfill", nil},
	} {
		cause := gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: "http://i/v1/allocations",
			Actual: tc.status, Body: body(tc.msg)}
		err := error(classifyError("CreateAllocation", cause))
		if tc.kind != nil && !errors.Is(err, tc.kind) {
			t.Errorf("%d %q: %v is not %v", tc.status, tc.msg, err, tc.kind)
		}
		for _, k := range []error{ErrNotFound, ErrConflict, ErrNodeLocked, ErrInvalid, ErrUnsupported, ErrUnavailable} {
			if k != tc.kind && errors.Is(err, k) {
				t.Errorf("%d %q: %v is also %v", tc.status, tc.msg, err, k)
			}
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "ironic CreateAllocation (POST http://i/v1/allocations): HTTP ") {
			t.Errorf("message %q", err)
		}
		if !gophercloud.ResponseCodeIs(err, tc.status) || StatusOf(err) != tc.status || FaultOf(err) != tc.msg {
			t.Errorf("%v: cause not exposed", err)
		}
	}
	if err := classifyError("GetNode", context.Canceled); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("canceled: %v", err)
	}
	if err := classifyError("GetNode", context.DeadlineExceeded); !errors.Is(err, ErrUnavailable) {
		t.Errorf("deadline: %v", err)
	}
}
