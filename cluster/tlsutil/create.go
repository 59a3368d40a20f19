package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"time"
)

// CertRequest describes a certificate to make.
type CertRequest struct {
	CommonName string
	IPs        []net.IP
	DNSNames   []string
	// Client makes a client-only certificate (for the CLI); otherwise the
	// certificate serves and dials, and names CommonName as a peer in a
	// URI SAN (PeerURI): only such a certificate speaks raft and reaches
	// the peers' endpoints.
	Client bool
	Days   int
}

// CA is a loaded certificate authority that signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewCA makes a self-signed ECDSA P-256 CA valid for days.
func NewCA(commonName string, days int) (*CA, error) {
	if days <= 0 {
		return nil, fmt.Errorf("validity of %d days must be positive", days)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("generate serial: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	ski := sha256.Sum256(pub)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"corral"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.AddDate(0, 0, days),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          ski[:20],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Sign makes a certificate for req, signed by ca, with a new P-256 key.
func (ca *CA) Sign(req CertRequest) (certPEM, keyPEM []byte, err error) {
	if req.Days <= 0 {
		return nil, nil, fmt.Errorf("validity of %d days must be positive", req.Days)
	}
	if req.CommonName == "" {
		return nil, nil, errors.New("a certificate needs a common name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial: %w", err)
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	var uris []*url.URL
	if req.Client {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		if !validPeerName(req.CommonName) {
			return nil, nil, fmt.Errorf("peer name %q cannot be carried in a peer certificate: use letters, digits, '.', '-' or '_'", req.CommonName)
		}
		uris = []*url.URL{PeerURI(req.CommonName)}
	}
	now := time.Now()
	notAfter := now.AddDate(0, 0, req.Days)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:   sn,
		Subject:        pkix.Name{CommonName: req.CommonName, Organization: []string{"corral"}},
		NotBefore:      now.Add(-time.Minute),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    usage,
		IPAddresses:    req.IPs,
		DNSNames:       req.DNSNames,
		URIs:           uris,
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// PEM returns the CA's certificate and key in PEM.
func (ca *CA) PEM() (certPEM, keyPEM []byte, err error) {
	kder, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// LoadCAFiles reads a CA certificate and its key (as written by PEM).
func LoadCAFiles(certPath, keyPath string) (*CA, error) {
	raw, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate %s: %w", certPath, err)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("CA certificate %s holds no PEM CERTIFICATE block", certPath)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", certPath)
	}
	raw, err = os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key %s: %w", keyPath, err)
	}
	b, _ = pem.Decode(raw)
	if b == nil {
		return nil, fmt.Errorf("CA key %s holds no PEM block", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		if ek, err2 := x509.ParseECPrivateKey(b.Bytes); err2 == nil {
			k = ek
		} else {
			return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
		}
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("CA key %s is not an ECDSA key", keyPath)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("CA key %s does not belong to the CA certificate %s", keyPath, certPath)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// WriteNew writes data to path, refusing to overwrite an existing file.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w (remove it first to replace it)", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
