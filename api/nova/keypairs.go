package nova

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/ssh"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// Key pairs, as Nova's os-keypairs: per user, created from an imported
// public key or generated here (an RSA key whose private half is answered
// once and never stored). A server booted with key_name gets the public
// key in its config drive.

// keyPairUser is the user whose key pairs a request reads or writes: the
// caller's (fsm.DefaultProject for static tokens), or from microversion
// 2.10 another user's, named by an admin.
func keyPairUser(c echo.Context, asked string) (string, error) {
	own := core.CallerOf(c).User
	if own == "" {
		own = fsm.DefaultProject
	}
	if asked == "" || asked == own {
		return own, nil
	}
	if !mvAtLeast(c, 2, 10) {
		return own, nil
	}
	if !core.CallerOf(c).SeesEveryProject() {
		return "", fmt.Errorf("%w: only admins may manage another user's key pairs", core.ErrForbidden)
	}
	return asked, nil
}

// keyPairView renders a key pair; show adds the fields of a single read.
func keyPairView(c echo.Context, k fsm.KeyPair, show bool) map[string]any {
	out := map[string]any{"name": k.Name, "public_key": k.PublicKey, "fingerprint": k.Fingerprint}
	if mvAtLeast(c, 2, 2) {
		out["type"] = k.Type
	}
	if show {
		out["user_id"], out["id"] = k.UserID, k.ID
		out["created_at"] = k.CreatedAt.UTC().Format(novaMicroTime)
		out["deleted"], out["deleted_at"], out["updated_at"] = false, nil, nil
	}
	return out
}

// sshFingerprint checks an OpenSSH public key and returns its MD5
// fingerprint, as Nova shows it.
func sshFingerprint(pub string) (string, error) {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pub))
	if err != nil {
		return "", core.BadRequest("Keypair data is invalid: failed to generate fingerprint: the public key is not an OpenSSH public key (%v)", err)
	}
	return ssh.FingerprintLegacyMD5(key), nil
}

// x509Fingerprint checks a PEM certificate and returns its SHA-1
// fingerprint, as Nova shows it.
func x509Fingerprint(pub string) (string, error) {
	block, _ := pem.Decode([]byte(pub))
	if block == nil || block.Type != "CERTIFICATE" {
		return "", core.BadRequest("Keypair data is invalid: failed to generate fingerprint: an x509 key pair is a PEM certificate")
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return "", core.BadRequest("Keypair data is invalid: failed to generate fingerprint: %v", err)
	}
	sum := sha1.Sum(block.Bytes)
	hexs := make([]string, len(sum))
	for i, b := range sum {
		hexs[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexs, ":"), nil
}

// generateSSHKey makes an RSA key pair: the authorized_keys line and the
// PEM private key.
func generateSSHKey() (pub, priv string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generate a key pair: %w", err)
	}
	sp, err := ssh.NewPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encode the public key: %w", err)
	}
	pub = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " Generated-by-corral"
	priv = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	return pub, priv, nil
}

// CreateKeyPair is POST /os-keypairs: an imported public key, or a new
// ssh key pair whose private half is answered once.
func (h *Handlers) CreateKeyPair(c echo.Context) error {
	var body wire.KeyPairCreateRequest
	if err := core.BindStrict(c, &body); err != nil {
		return err
	}
	in := body.KeyPair
	if in == nil {
		return core.BadRequest(`the body must be {"keypair": {"name": ..., "public_key": ...}}`)
	}
	if err := fsm.ValidateKeyPairName(in.Name); err != nil {
		return err
	}
	if strings.TrimSpace(in.Name) != in.Name { // Nova's name format
		return core.BadRequest("%s", invalidName)
	}
	typ := fsm.KeyTypeSSH
	if in.Type != "" {
		if !mvAtLeast(c, 2, 2) {
			return core.BadRequest("the key pair type needs microversion 2.2")
		}
		typ = in.Type
	}
	if typ != fsm.KeyTypeSSH && typ != fsm.KeyTypeX509 {
		return core.BadRequest("Invalid input for field/attribute type. Value: %s. %q is not one of ['ssh', 'x509']", typ, typ)
	}
	if in.UserID != "" && !mvAtLeast(c, 2, 10) {
		return core.BadRequest("user_id in a key pair needs microversion 2.10")
	}
	user, err := keyPairUser(c, in.UserID)
	if err != nil {
		return err
	}
	k := fsm.KeyPair{UserID: user, Name: in.Name, Type: typ}
	private := ""
	switch {
	case in.PublicKey != nil && typ == fsm.KeyTypeSSH:
		k.PublicKey = strings.TrimSpace(*in.PublicKey)
		k.Fingerprint, err = sshFingerprint(k.PublicKey)
	case in.PublicKey != nil:
		k.PublicKey = strings.TrimSpace(*in.PublicKey)
		k.Fingerprint, err = x509Fingerprint(k.PublicKey)
	case typ == fsm.KeyTypeSSH:
		if k.PublicKey, private, err = generateSSHKey(); err == nil {
			k.Fingerprint, err = sshFingerprint(k.PublicKey)
		}
	default:
		return core.BadRequest("corral generates ssh key pairs only: import an x509 certificate with public_key")
	}
	if err != nil {
		return err
	}
	if len(k.PublicKey) > fsm.MaxPublicKeyLen {
		return core.BadRequest("Keypair data is invalid: the public key is longer than %d bytes", fsm.MaxPublicKeyLen)
	}
	if err := h.st.Propose(c, &fsm.CreateKeyPair{KeyPair: k}); err != nil {
		return err
	}
	out := keyPairView(c, k, false)
	out["user_id"] = user
	if private != "" {
		out["private_key"] = private
	}
	code := http.StatusOK
	if mvAtLeast(c, 2, 2) {
		code = http.StatusCreated
	}
	return c.JSON(code, map[string]any{"keypair": out})
}

// ListKeyPairs is GET /os-keypairs: the user's key pairs, paged from 2.35.
func (h *Handlers) ListKeyPairs(c echo.Context) error {
	user, err := keyPairUser(c, c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	p := page{limit: -1}
	if mvAtLeast(c, 2, 35) {
		if p, err = parsePage(c.QueryParams(), limitZeroIsEmpty); err != nil {
			return err
		}
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	listed, more, err := pageOf(h.st.Store().KeyPairs(user), p, func(k fsm.KeyPair) string { return k.Name }, nil)
	if err != nil {
		return err
	}
	out := []map[string]any{}
	for _, k := range listed {
		out = append(out, map[string]any{"keypair": keyPairView(c, k, false)})
	}
	resp := map[string]any{"keypairs": out}
	if more && len(listed) > 0 {
		resp["keypairs_links"] = nextLinks(c, listed[len(listed)-1].Name)
	}
	return c.JSON(http.StatusOK, resp)
}

// GetKeyPair is GET /os-keypairs/{name}.
func (h *Handlers) GetKeyPair(c echo.Context) error {
	user, err := keyPairUser(c, c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	if err := h.st.ReadBarrier(c); err != nil {
		return err
	}
	k, err := h.st.Store().KeyPair(user, c.Param("name"))
	if err != nil {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Keypair %s not found for user %s", c.Param("name"), user))
	}
	return c.JSON(http.StatusOK, map[string]any{"keypair": keyPairView(c, k, true)})
}

// DeleteKeyPair is DELETE /os-keypairs/{name}.
func (h *Handlers) DeleteKeyPair(c echo.Context) error {
	user, err := keyPairUser(c, c.QueryParam("user_id"))
	if err != nil {
		return err
	}
	err = h.st.Propose(c, &fsm.DeleteKeyPair{UserID: user, Name: c.Param("name")})
	if errors.Is(err, fsm.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("Keypair %s not found for user %s", c.Param("name"), user))
	}
	if err != nil {
		return err
	}
	if mvAtLeast(c, 2, 2) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.NoContent(http.StatusAccepted)
}
