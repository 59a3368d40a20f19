package wire

// KeyPairCreateRequest is POST /os-keypairs.
type KeyPairCreateRequest struct {
	KeyPair *KeyPairCreate `json:"keypair"`
}

// KeyPairCreate imports a public key, or without one has corral generate
// an ssh key pair (its private half is answered once).
type KeyPairCreate struct {
	Name      string  `json:"name"`
	PublicKey *string `json:"public_key,omitempty"`
	Type      string  `json:"type,omitempty"`    // ssh or x509 (2.2)
	UserID    string  `json:"user_id,omitempty"` // another user's, for admins (2.10)
}

// ServiceUpdate is PUT /os-services/{id} from microversion 2.53.
type ServiceUpdate struct {
	Status         *string `json:"status,omitempty"` // enabled or disabled
	DisabledReason *string `json:"disabled_reason,omitempty"`
	ForcedDown     *bool   `json:"forced_down,omitempty"`
}

// LegacyServiceUpdate is PUT /os-services/{action} below 2.53, the action
// being enable, disable, disable-log-reason or force-down.
type LegacyServiceUpdate struct {
	Host           string  `json:"host"`
	Binary         string  `json:"binary"`
	DisabledReason *string `json:"disabled_reason,omitempty"`
	ForcedDown     *bool   `json:"forced_down,omitempty"`
}
