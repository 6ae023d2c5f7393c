package cimd

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// Dynamic registration defaults.
const (
	defaultMaxBodyBytes   = 16 << 10
	defaultIPRate         = rate.Limit(1.0 / 60) // one per minute…
	defaultIPBurst        = 10                   // …after a burst of ten
	defaultDCRGlobalRate  = rate.Limit(5)
	defaultDCRGlobalBurst = 20
	defaultMaxTrackedIPs  = 4096
	// defaultNetworkClients registrations per network per
	// defaultNetworkClientWindow.
	defaultNetworkClients      = 100
	defaultNetworkClientWindow = 24 * time.Hour
	// clientIDPrefix starts every issued client_id, so that it can never
	// be mistaken for a Client ID Metadata Document URL.
	clientIDPrefix = "dcr_"
)

// deprecationHeader is the RFC 9745 Deprecation header value on every
// dynamic registration response: the MCP 2026-07-28 revision, which
// deprecates dynamic registration, dated 2026-07-28T00:00:00Z.
const deprecationHeader = "@1785196800"

// DCRConfig configures [NewDCRHandler].
type DCRConfig struct {
	// Store receives registered clients. Required; use the same Store in
	// RegistryConfig.
	Store Store
	// AuthMethods are the token_endpoint_auth_method values accepted. Nil
	// means none, client_secret_basic and client_secret_post.
	// private_key_jwt must be listed explicitly, and only when your token
	// endpoint verifies client assertions (this package does not). Secrets
	// are issued for the client_secret_* methods.
	// An absent method means client_secret_basic (RFC 7591 §2).
	AuthMethods []string
	// DefaultApplicationType applies to requests without
	// application_type. Empty means "web" (OpenID Connect Dynamic Client
	// Registration 1.0 §2), which refuses loopback redirect URIs; set
	// "native" to accept pre-2026 MCP clients that register loopback
	// redirects without saying so.
	DefaultApplicationType string
	// AllowPrivateUseSchemes accepts reverse-domain private-use redirect
	// schemes (RFC 8252 §7.1) for native clients. Off by default.
	AllowPrivateUseSchemes bool
	// MaxBodyBytes caps the request body; larger requests get 413. Zero
	// means 16 KiB.
	MaxBodyBytes int64
	// SecretLifetime sets client_secret_expires_at for issued secrets.
	// Zero means secrets do not expire (client_secret_expires_at 0).
	SecretLifetime time.Duration
	// IPRate and IPBurst bound registrations per client IP (IPv6 per /64).
	// Zero means one per minute and a burst of 10.
	IPRate  rate.Limit
	IPBurst int
	// GlobalRate and GlobalBurst bound registrations overall. Zero means
	// 5 per second and a burst of 20. One network (an IPv4 /24, an IPv6
	// /48), however many addresses it uses, gets at most half of it (a
	// bucket of half the rate and burst), so that it cannot exhaust the
	// registrations of other networks.
	GlobalRate  rate.Limit
	GlobalBurst int
	// MaxTrackedIPs bounds the per-IP limiters kept, and the per-network
	// ones, shared fairly by network: a full map evicts a least recently
	// used limiter of the network holding the most. Zero means 4096.
	MaxTrackedIPs int
	// NetworkClients bounds the registrations one network (an IPv4 /24,
	// an IPv6 /48) may store within NetworkClientWindow: a network that
	// stored that many in the last window gets 429 until the oldest
	// leaves it, and nothing of any other network is refused or evicted
	// for it. Zero means 100 per 24 hours. Set NetworkClientWindow to the
	// age at which you Prune to bound what one network holds in the store
	// to NetworkClients; with a longer retention it holds at most
	// NetworkClients per window of it. The count is kept by NetworkQuota.
	NetworkClients      int
	NetworkClientWindow time.Duration
	// NetworkQuota counts the registrations per network for
	// NetworkClients. If nil, Store's when Store implements [NetworkQuota]
	// (redisstore.NewClientStore's does: replicas sharing the store share
	// the quota), else a count in this handler's process, since it
	// started, over at most MaxTrackedIPs networks (N replicas with their
	// own counts would let a network store N times the quota).
	NetworkQuota NetworkQuota
	// ClientIP returns the address to rate-limit a request by. If nil, the
	// host of r.RemoteAddr. X-Forwarded-For and similar headers are never
	// read unless this function does so: set it only behind a proxy you
	// control, and take the address that proxy appended.
	ClientIP func(r *http.Request) string
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
	// Logger receives store failures (Error) and the internal reason for
	// each refused registration (Debug). If nil, nothing is logged.
	Logger *slog.Logger
}

func (c DCRConfig) withDefaults() DCRConfig {
	if c.AuthMethods == nil {
		c.AuthMethods = []string{authMethodNone, authMethodClientSecretBasic, authMethodClientSecretPost}
	}
	c.AuthMethods = slices.Clone(c.AuthMethods)
	if c.DefaultApplicationType == "" {
		c.DefaultApplicationType = appTypeWeb
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = defaultMaxBodyBytes
	}
	if c.IPRate == 0 {
		c.IPRate = defaultIPRate
	}
	if c.IPBurst == 0 {
		c.IPBurst = defaultIPBurst
	}
	if c.GlobalRate == 0 {
		c.GlobalRate = defaultDCRGlobalRate
	}
	if c.GlobalBurst == 0 {
		c.GlobalBurst = defaultDCRGlobalBurst
	}
	if c.MaxTrackedIPs == 0 {
		c.MaxTrackedIPs = defaultMaxTrackedIPs
	}
	if c.NetworkClients == 0 {
		c.NetworkClients = defaultNetworkClients
	}
	if c.NetworkClientWindow == 0 {
		c.NetworkClientWindow = defaultNetworkClientWindow
	}
	if c.NetworkQuota == nil {
		if q, ok := c.Store.(NetworkQuota); ok {
			c.NetworkQuota = q
		} else {
			c.NetworkQuota = newQuota(c.MaxTrackedIPs)
		}
	}
	if c.ClientIP == nil {
		c.ClientIP = remoteHost
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// DCRHandler is an RFC 7591 dynamic client registration endpoint, for
// MCP clients of the 2025-11-25 revision and earlier.
//
// The MCP 2026-07-28 revision deprecates dynamic client registration in
// favour of Client ID Metadata Documents ([Resolver]); removal may come
// with the first revision on or after 2027-07-28. Every response carries
// a Deprecation header ("@1785196800"). (The Go "Deprecated:" marker
// is not used, because the protocol feature is still permitted.)
//
// Registration is unauthenticated: anyone can register any client. The
// handler rate-limits per client IP, per network and globally, bounds the
// registrations one network stores per window (NetworkClients), refuses
// jwks and jwks_uri unless the method is private_key_jwt, and
// cimd/boltstore and [memoryStore] cap each record at [maxRecordBytes];
// but the Store still grows with every registration it accepts. This package never prunes on its own:
// call boltstore.Store.Prune (or [memoryStore.Prune]) periodically.
type DCRHandler struct {
	cfg    DCRConfig
	pol    policy
	limits *limiter
}

// NewDCRHandler returns a DCRHandler for cfg (copied). It fails with
// an [*Error] with Reason "config" without a Store, with an unknown auth method or application
// type, or with negative limits.
func NewDCRHandler(cfg DCRConfig) (*DCRHandler, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: DCRConfig.Store is required", errConfig)
	}
	for _, m := range cfg.AuthMethods {
		switch m {
		case authMethodNone, authMethodClientSecretBasic, authMethodClientSecretPost, authMethodPrivateKeyJWT:
		default:
			return nil, fmt.Errorf("%w: unsupported auth method in DCRConfig.AuthMethods", errConfig)
		}
	}
	if cfg.DefaultApplicationType != appTypeWeb && cfg.DefaultApplicationType != appTypeNative {
		return nil, fmt.Errorf("%w: DefaultApplicationType must be web or native", errConfig)
	}
	if cfg.MaxBodyBytes < 0 || cfg.SecretLifetime < 0 || cfg.IPRate < 0 || cfg.IPBurst < 0 ||
		cfg.GlobalRate < 0 || cfg.GlobalBurst < 0 || cfg.MaxTrackedIPs < 0 ||
		cfg.NetworkClients < 0 || cfg.NetworkClientWindow < 0 {
		return nil, fmt.Errorf("%w: negative value in DCRConfig", errConfig)
	}
	return &DCRHandler{
		cfg: cfg,
		pol: policy{
			defaultAppType:    cfg.DefaultApplicationType,
			defaultAuthMethod: authMethodClientSecretBasic,
			authMethods:       cfg.AuthMethods,
			allowPrivateUse:   cfg.AllowPrivateUseSchemes,
		},
		limits: newLimiter(cfg.GlobalRate, cfg.GlobalBurst, cfg.IPRate, cfg.IPBurst, cfg.MaxTrackedIPs, ipPartition),
	}, nil
}

// authMethods returns the token_endpoint_auth_method values the handler
// accepts, for [ServerMetadataConfig].
func (h *DCRHandler) authMethods() []string { return slices.Clone(h.cfg.AuthMethods) }

// registration is the RFC 7591 §3.2.1 response body.
type registration struct {
	Document
	ClientIDIssuedAt      int64  `json:"client_id_issued_at"`
	ClientSecret          string `json:"client_secret,omitempty"`
	ClientSecretExpiresAt *int64 `json:"client_secret_expires_at,omitempty"`
}

// ServeHTTP handles one registration request: POST, Content-Type
// application/json, a body within MaxBodyBytes. Answers: 201 with the
// registration (RFC 7591 §3.2.1); 400 with "invalid_redirect_uri" or
// "invalid_client_metadata" (§3.2.2), the latter also when the Store
// refuses the client with [ErrRecordTooLarge]; 405, 413, 415 and 429 with
// a JSON error body (429 also when the client's network holds
// NetworkClients registrations); 503 "temporarily_unavailable" with
// Retry-After when the NetworkQuota fails (fail closed); 500
// "server_error" if the Store fails otherwise.
// Every answer has Cache-Control: no-store and the Deprecation header.
func (h *DCRHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Deprecation", deprecationHeader)
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Pragma", "no-cache")
	if r.Method != http.MethodPost {
		hdr.Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request", "registration requires POST")
		return
	}
	now := h.cfg.Now()
	key := rateKey(h.cfg.ClientIP(r))
	if ok, wait := h.limits.reserve(key, now); !ok {
		setRetryAfter(hdr, wait)
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many registration requests")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		hdr.Set("Accept-Post", "application/json")
		writeError(w, http.StatusUnsupportedMediaType, "invalid_client_metadata", "content type must be application/json")
		return
	}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_client_metadata", "request body too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_client_metadata", "request body too large")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "unreadable request body")
		return
	}
	d, err := parseDCRRequest(body, h.pol)
	if err != nil {
		h.cfg.Logger.DebugContext(r.Context(), "cimd: dynamic registration refused", "err", err)
		if errors.Is(err, errInvalidRedirectURI) {
			writeError(w, http.StatusBadRequest, "invalid_redirect_uri", "a redirect uri is not allowed")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the client metadata is not acceptable")
		return
	}
	network := ipPartition(key)
	ok, wait, err := h.cfg.NetworkQuota.Take(r.Context(), network, h.cfg.NetworkClients, h.cfg.NetworkClientWindow, now)
	if err != nil {
		h.cfg.Logger.ErrorContext(r.Context(), "cimd: dynamic registration: network quota unavailable", "err", err)
		hdr.Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "registration is unavailable")
		return
	}
	if !ok {
		h.cfg.Logger.DebugContext(r.Context(), "cimd: dynamic registration refused: the network's quota is full", "network", network)
		setRetryAfter(hdr, wait)
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many registrations from this network")
		return
	}
	c, resp := h.newClient(d, now)
	if err := h.cfg.Store.Put(r.Context(), c); err != nil {
		if err := h.cfg.NetworkQuota.Give(r.Context(), network, now); err != nil {
			h.cfg.Logger.ErrorContext(r.Context(), "cimd: dynamic registration: network quota give-back failed", "err", err)
		}
		if errors.Is(err, ErrRecordTooLarge) {
			h.cfg.Logger.DebugContext(r.Context(), "cimd: dynamic registration refused", "err", err)
			writeError(w, http.StatusBadRequest, "invalid_client_metadata", "the client metadata is too large")
			return
		}
		h.cfg.Logger.ErrorContext(r.Context(), "cimd: dynamic registration: store failed", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "registration failed")
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

// setRetryAfter sets Retry-After to wait in whole seconds, rounded up.
func setRetryAfter(hdr http.Header, wait time.Duration) {
	hdr.Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
}

// newClient mints the client_id (and secret, for the client_secret_*
// methods) for a validated registration request.
func (h *DCRHandler) newClient(d *Document, now time.Time) (*Client, *registration) {
	d.ClientID = clientIDPrefix + randomToken(16)
	c := &Client{Document: *d, IssuedAt: now.Truncate(time.Second), Source: sourceDCR}
	resp := &registration{Document: *d, ClientIDIssuedAt: now.Unix()}
	if d.TokenEndpointAuthMethod == authMethodClientSecretBasic || d.TokenEndpointAuthMethod == authMethodClientSecretPost {
		resp.ClientSecret = randomToken(32)
		c.SetSecret(resp.ClientSecret)
		var exp int64
		if h.cfg.SecretLifetime > 0 {
			c.SecretExpiresAt = now.Add(h.cfg.SecretLifetime).Truncate(time.Second)
			exp = c.SecretExpiresAt.Unix()
		}
		resp.ClientSecretExpiresAt = &exp
	}
	return c, resp
}

// parseDCRRequest parses and validates an RFC 7591 §3.1 registration
// request body. client_id, client_secret and software_statement members
// are ignored: the server assigns identifiers, and software statements
// are not verified. Errors wrap errMalformed, errDuplicateMember,
// errInvalidClientMetadata or errInvalidRedirectURI.
func parseDCRRequest(body []byte, p policy) (*Document, error) {
	m, err := decodeMembers(body, metadataNames())
	if err != nil {
		return nil, err
	}
	d, err := readMetadata(m)
	if err != nil {
		return nil, err
	}
	if err := p.validate(d); err != nil {
		return nil, err
	}
	return d, nil
}

// randomToken returns n random bytes from crypto/rand, base64url-encoded.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// remoteHost is the default DCRConfig.ClientIP: RemoteAddr without port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// rateKey groups IPv6 addresses by /64, the usual smallest assignment.
func rateKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

func writeError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}{code, description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the types used here
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
