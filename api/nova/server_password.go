package nova

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// A server's admin password, as Nova's create and rebuild take it: the
// one given, or one drawn here (never in Apply), delivered to the node in
// its config drive (meta_data admin_pass) and answered when
// enable_instance_password is on, as Nova's default has it.

// passwordLength is Nova's password_length.
const passwordLength = 12

// passwordSymbols are the groups Nova's generate_password draws from (no
// characters that read alike): one of each, then any.
var passwordSymbols = []string{"23456789", "ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz"}

func randIndex(n int) int {
	i, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the platform's entropy failed
	}
	return int(i.Int64())
}

// newPassword draws a password as Nova's generate_password: one character
// of each group, the rest of any, shuffled.
func newPassword() string {
	all := ""
	for _, g := range passwordSymbols {
		all += g
	}
	b := make([]byte, 0, passwordLength)
	for _, g := range passwordSymbols {
		b = append(b, g[randIndex(len(g))])
	}
	for len(b) < passwordLength {
		b = append(b, all[randIndex(len(all))])
	}
	for i := len(b) - 1; i > 0; i-- {
		j := randIndex(i + 1)
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// adminPassword is the password of a create or rebuild: the given one
// (any string, as Nova's schema takes it, within a bound), or a new one.
func adminPassword(given *string) (string, error) {
	if given == nil {
		return newPassword(), nil
	}
	if len(*given) > fsm.MaxAdminPassLen {
		return "", core.BadRequest("Invalid input for field/attribute adminPass: at most %d bytes", fsm.MaxAdminPassLen)
	}
	return *given, nil
}

// shownPassword is the adminPass of an answer: pass when
// enable_instance_password is on, else none.
func (h *Handlers) shownPassword(pass string) string {
	if h.noPassword {
		return ""
	}
	return pass
}

// ShowServerPassword is GET /servers/{id}/os-server-password: in Nova,
// the password the guest posted, encrypted, to the metadata service. A
// guest of corral reads its config drive and has no metadata service to
// post to, so a server's password is Nova's empty one.
func (h *Handlers) ShowServerPassword(c echo.Context) error {
	if _, err := h.serverForEdit(c); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"password": ""})
}

// ClearServerPassword is DELETE /servers/{id}/os-server-password, which
// in Nova forgets the posted password (it does not change the guest's):
// there is none to forget (ShowServerPassword).
func (h *Handlers) ClearServerPassword(c echo.Context) error {
	if _, err := h.serverForEdit(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
