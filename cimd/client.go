package cimd

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"slices"
	"time"
)

// Source says where a [Client] came from.
type Source string

const (
	// SourceStatic: pre-registered through RegistryConfig.Static.
	SourceStatic Source = "static"
	// SourceCIMD: resolved from a Client ID Metadata Document.
	SourceCIMD Source = "cimd"
	// SourceDCR: registered through RFC 7591 dynamic registration.
	SourceDCR Source = "dcr"
)

// Client is a client an authorization server may serve, whatever its
// source. Its metadata is a validated [Document] (embedded, so
// c.ClientID, c.RedirectURIs, … work directly).
//
// A Client may hold the SHA-256 hash of an issued secret; the secret
// itself is never stored. Client implements json.Marshaler and
// json.Unmarshaler, including that hash, so that [Store] implementations
// can persist it as JSON. Do not send that JSON to anyone.
type Client struct {
	Document
	// IssuedAt is when the client was registered (RFC 7591
	// client_id_issued_at). Zero for static and CIMD clients.
	IssuedAt time.Time `json:"issued_at,omitzero"`
	// SecretExpiresAt is when the issued secret expires (RFC 7591
	// client_secret_expires_at); zero means never.
	SecretExpiresAt time.Time `json:"secret_expires_at,omitzero"`
	// Source is where the client came from.
	Source Source `json:"source"`

	secretHash []byte
}

// RedirectURIAllowed reports whether uri may be used as this client's
// redirect_uri; see the function [RedirectURIAllowed].
func (c *Client) RedirectURIAllowed(uri string) bool {
	return RedirectURIAllowed(c.RedirectURIs, uri)
}

// SetSecret stores the SHA-256 hash of secret for client authentication
// with client_secret_basic or client_secret_post, for pre-registered
// clients. SHA-256 without salt or stretching is adequate only because
// secrets are high-entropy (dynamic registration issues 256 random bits);
// do not use it for human-chosen passwords.
func (c *Client) SetSecret(secret string) {
	h := sha256.Sum256([]byte(secret))
	c.secretHash = h[:]
}

// HasSecret reports whether the client has a secret.
func (c *Client) HasSecret() bool { return len(c.secretHash) > 0 }

// secretMatches compares secret with the stored hash in constant time.
// It hashes even when there is no stored hash.
func (c *Client) secretMatches(secret string) bool {
	h := sha256.Sum256([]byte(secret))
	want := c.secretHash
	if len(want) != sha256.Size {
		want = make([]byte, sha256.Size)
		subtle.ConstantTimeCompare(h[:], want)
		return false
	}
	return subtle.ConstantTimeCompare(h[:], want) == 1
}

// Clone returns a deep copy of c.
func (c *Client) Clone() *Client {
	d := *c
	d.Document = *c.Document.Clone()
	d.secretHash = slices.Clone(c.secretHash)
	return &d
}

// clientFields is Client's exported fields without its methods, so that
// the JSON methods do not recurse.
type clientFields Client

// clientJSON is the persisted form of a Client.
type clientJSON struct {
	clientFields
	SecretHash []byte `json:"secret_sha256,omitempty"`
}

// MarshalJSON encodes the client, including the secret hash, for storage:
// compact and not HTML-escaped, so that the record is no larger than the
// metadata it holds. (json.Marshal(c) calls this method but then escapes
// '<', '>' and '&' in its output again; call c.MarshalJSON directly, or
// use a json.Encoder with SetEscapeHTML(false), as the stores do.)
func (c Client) MarshalJSON() ([]byte, error) {
	return marshalNoEscape(clientJSON{clientFields: clientFields(c), SecretHash: c.secretHash})
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes what MarshalJSON produced.
func (c *Client) UnmarshalJSON(data []byte) error {
	var v clientJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*c = Client(v.clientFields)
	c.secretHash = v.SecretHash
	return nil
}
