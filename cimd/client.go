package cimd

import (
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"time"

	"github.com/mcpguard/mcpguard/internal/clientrecord"
)

// Sources of a [Client] (Client.Source).
const (
	// sourceStatic: pre-registered through RegistryConfig.Static.
	sourceStatic = "static"
	// sourceCIMD: resolved from a Client ID Metadata Document.
	sourceCIMD = "cimd"
	// sourceDCR: registered through RFC 7591 dynamic registration.
	sourceDCR = "dcr"
)

// Client is a client an authorization server may serve, whatever its
// source. Its metadata is a validated [Document] (embedded, so
// c.ClientID, c.RedirectURIs, … work directly).
//
// A Client may hold the SHA-256 hash of an issued secret; the secret
// itself is never stored. [Store] implementations persist a Client as
// JSON (encoding/json, with SetEscapeHTML(false) so that a record is no
// larger than its metadata), hash included. Do not send that JSON to
// anyone.
type Client struct {
	Document
	// IssuedAt is when the client was registered (RFC 7591
	// client_id_issued_at). Zero for static and CIMD clients.
	IssuedAt time.Time `json:"issued_at,omitzero"`
	// SecretExpiresAt is when the issued secret expires (RFC 7591
	// client_secret_expires_at); zero means never.
	SecretExpiresAt time.Time `json:"secret_expires_at,omitzero"`
	// Source is where the client came from: "static" (pre-registered
	// through RegistryConfig.Static), "cimd" (resolved from a Client ID
	// Metadata Document) or "dcr" (RFC 7591 dynamic registration).
	Source string `json:"source"`
	// SecretSHA256 is the SHA-256 hash of the client's secret
	// ([Client.SetSecret]), or empty when it has none: the client then
	// cannot authenticate with client_secret_basic or client_secret_post.
	SecretSHA256 []byte `json:"secret_sha256,omitempty"`
}

// RedirectURIAllowed reports whether uri may be used as this client's
// redirect_uri: byte for byte one of c.RedirectURIs (RFC 9700 §4.1.1),
// except that an http redirect URI registered on the IP literal 127.0.0.1
// or [::1] accepts any port, or none (RFC 8252 §7.3), when the scheme,
// host, path and query are byte-identical. localhost gets no port
// relaxation.
func (c *Client) RedirectURIAllowed(uri string) bool {
	return redirectURIAllowed(c.RedirectURIs, uri)
}

// SetSecret sets c.SecretSHA256 to the SHA-256 hash of secret, for client
// authentication with client_secret_basic or client_secret_post, for
// pre-registered clients. SHA-256 without salt or stretching is adequate
// only because secrets are high-entropy (dynamic registration issues 256
// random bits); do not use it for human-chosen passwords.
func (c *Client) SetSecret(secret string) {
	h := sha256.Sum256([]byte(secret))
	c.SecretSHA256 = h[:]
}

// secretMatches compares secret with the stored hash in constant time.
// It hashes even when there is no stored hash.
func (c *Client) secretMatches(secret string) bool {
	h := sha256.Sum256([]byte(secret))
	want := c.SecretSHA256
	if len(want) != sha256.Size {
		want = make([]byte, sha256.Size)
		subtle.ConstantTimeCompare(h[:], want)
		return false
	}
	return subtle.ConstantTimeCompare(h[:], want) == 1
}

// clone returns a deep copy of c.
func (c *Client) clone() *Client {
	d := *c
	d.Document = *c.Document.clone()
	d.SecretSHA256 = slices.Clone(c.SecretSHA256)
	return &d
}

// marshalNoEscape is the stored form of v (internal/clientrecord).
func marshalNoEscape(v any) ([]byte, error) { return clientrecord.Marshal(v) }
