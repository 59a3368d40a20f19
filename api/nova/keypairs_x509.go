package nova

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// x509 key pairs generated here, as Nova's generate_winrm_x509_cert makes
// them for Windows' WinRM certificate authentication: a self-signed RSA
// certificate for ten years, subject CN=<user id>, extended key usage
// clientAuth and the user principal name <user id>@localhost as a
// subject alternative name. Nova answers the private key as a base64
// PKCS#12 bundle with an empty password; corral answers it as a PEM
// PKCS#8 private key (the Go standard library writes no PKCS#12), which
// openssl pkcs12 -export -inkey turns into Nova's bundle.

// oidUPN is Microsoft's user principal name otherName
// (1.3.6.1.4.1.311.20.2.3).
var oidUPN = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}

// oidSubjectAltName is the subjectAltName extension.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// upnSAN is the DER of a subjectAltName holding one otherName UPN, as
// openssl writes subjectAltName = otherName:1.3.6.1.4.1.311.20.2.3;UTF8:upn.
func upnSAN(upn string) ([]byte, error) {
	value, err := asn1.MarshalWithParams(upn, "utf8")
	if err != nil {
		return nil, err
	}
	other := struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue `asn1:"tag:0,explicit"`
	}{Type: oidUPN, Value: asn1.RawValue{FullBytes: value}}
	otherDER, err := asn1.Marshal(other)
	if err != nil {
		return nil, err
	}
	// otherName is [0] IMPLICIT in GeneralName: retag the SEQUENCE.
	otherDER[0] = 0xa0
	return asn1.Marshal(asn1.RawValue{Tag: asn1.TagSequence, IsCompound: true, Class: asn1.ClassUniversal, Bytes: otherDER})
}

// generateX509 makes a certificate key pair for user: the PEM
// certificate and the PEM private key.
func generateX509(user string) (cert, priv string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generate a key pair: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", "", fmt.Errorf("generate a serial number: %w", err)
	}
	san, err := upnSAN(user + "@localhost")
	if err != nil {
		return "", "", fmt.Errorf("encode the user principal name: %w", err)
	}
	now := time.Now().UTC()
	tmpl := &x509.Certificate{
		SerialNumber:    serial,
		Subject:         pkix.Name{CommonName: user},
		NotBefore:       now,
		NotAfter:        now.AddDate(0, 0, 3650),
		ExtKeyUsage:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		ExtraExtensions: []pkix.Extension{{Id: oidSubjectAltName, Value: san}},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", fmt.Errorf("sign the certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("encode the private key: %w", err)
	}
	cert = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	priv = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	return cert, priv, nil
}
