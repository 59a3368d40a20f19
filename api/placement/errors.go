package placement

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	fsmplacement "github.com/corral-dev/corral/fsm/placement"
)

// errCorralOwned refuses writes to the providers corral keeps.
var errCorralOwned = errors.New("corral keeps these resource providers itself, from Ironic's nodes and the hypervisor hosts' [hypervisor] configuration: change the node in Ironic (or the host's configuration) instead")

// Error keeps Placement's status and error code; the API's error mapper
// (core.CodedError) renders them in Placement's error body.
type Error struct {
	Status int
	Code   string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// HTTPStatus implements core.CodedError.
func (e *Error) HTTPStatus() int { return e.Status }

// ErrorCode implements core.CodedError.
func (e *Error) ErrorCode() string { return e.Code }

// httpError maps the placement state's errors to HTTP; an error that
// already carries its status (a handler's own) keeps it.
func httpError(err error) error {
	var own *Error
	var he *echo.HTTPError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &own), errors.As(err, &he):
		return err
	}
	return &Error{Status: fsmplacement.HTTPStatus(err), Code: fsmplacement.ErrorCode(err), Msg: err.Error()}
}

// RefuseWrite answers every write under Placement: corral keeps the
// providers itself.
func RefuseWrite(echo.Context) error {
	return echo.NewHTTPError(http.StatusForbidden, errCorralOwned.Error())
}
