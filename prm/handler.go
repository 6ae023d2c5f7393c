package prm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Header values the handler sends.
const (
	cacheControl = "public, max-age=3600"
	allowMethods = "GET, HEAD, OPTIONS"
	allowHeaders = "Authorization, MCP-Protocol-Version"
	corsMaxAge   = "7200"
)

// Handler validates m once ([Metadata.Validate] and the path rules of
// [Paths]), copies it, encodes the JSON documents once, and returns a handler
// that serves them at the two paths returned by [Paths], compared exactly
// with the request's URL path (no trailing-slash or case folding); any other
// path is 404. Request Host, X-Forwarded-* and Forwarded headers are ignored.
//
//   - At the path-inserted path the document is m, with resource exactly as
//     configured (RFC 9728 §3.3 requires identity with the URL the client
//     uses).
//   - At the root path, when the resource has a path, the document is a copy
//     of m whose resource is the origin (scheme://host[:port], spelled as in
//     m.Resource). RFC 9728 §3.3 makes a client that probed the root URL
//     expect the identifier it built that URL from, which is the origin;
//     the MCP go-sdk client checks exactly that. A document naming ".../mcp"
//     at the root would be rejected by such clients. A client that uses the
//     root document asks for tokens for the origin, so the token validator
//     decides separately whether the origin is an accepted audience. MCP
//     clients try resource_metadata and the path-inserted URL first, so
//     most never read the root document.
//
// GET and HEAD get 200 with Content-Type: application/json, Cache-Control:
// public, max-age=3600, X-Content-Type-Options: nosniff and
// Access-Control-Allow-Origin: *. OPTIONS gets 204 with CORS preflight
// headers (any origin; methods GET, HEAD, OPTIONS; request headers
// Authorization and MCP-Protocol-Version). Other methods get 405 with an
// Allow header. An invalid m returns an error wrapping [ErrInvalidMetadata],
// or [ErrInvalidResource] for a valid resource whose path [Paths] refuses.
//
// The response is always the same bytes; the cache lifetime (one hour) is
// fixed.
func Handler(m Metadata) (http.Handler, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	m = m.clone()
	inserted, root, err := Paths(m.Resource)
	if err != nil {
		return nil, err
	}
	h := &handler{inserted: inserted, root: root}
	if h.insertedBody, err = json.Marshal(m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
	}
	h.rootBody = h.insertedBody
	if inserted != root {
		rm := m.clone()
		rm.Resource = resourceOrigin(m.Resource)
		if h.rootBody, err = json.Marshal(rm); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
		}
	}
	return h, nil
}

type handler struct {
	inserted, root         string
	insertedBody, rootBody []byte
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	switch r.URL.Path {
	case h.inserted:
		body = h.insertedBody
	case h.root:
		body = h.rootBody
	default:
		http.NotFound(w, r)
		return
	}
	hdr := w.Header()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Cache-Control", cacheControl)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Access-Control-Allow-Origin", "*")
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	case http.MethodOptions:
		hdr.Set("Allow", allowMethods)
		hdr.Set("Access-Control-Allow-Origin", "*")
		hdr.Set("Access-Control-Allow-Methods", allowMethods)
		hdr.Set("Access-Control-Allow-Headers", allowHeaders)
		hdr.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
	default:
		hdr.Set("Allow", allowMethods)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// resourceOrigin returns scheme://authority of a resource that passed
// checkResource (so it has no userinfo), spelled as configured.
func resourceOrigin(resource string) string {
	i := strings.Index(resource, "://") + len("://")
	if j := strings.IndexByte(resource[i:], '/'); j >= 0 {
		return resource[:i+j]
	}
	return resource
}

// clone returns a deep copy of m, so later changes to the caller's slices
// do not reach the handler.
func (m Metadata) clone() Metadata {
	m.AuthorizationServers = slices.Clone(m.AuthorizationServers)
	m.ScopesSupported = slices.Clone(m.ScopesSupported)
	m.BearerMethodsSupported = slices.Clone(m.BearerMethodsSupported)
	m.ResourceSigningAlgValuesSupported = slices.Clone(m.ResourceSigningAlgValuesSupported)
	m.AuthorizationDetailsTypesSupported = slices.Clone(m.AuthorizationDetailsTypesSupported)
	m.DPoPSigningAlgValuesSupported = slices.Clone(m.DPoPSigningAlgValuesSupported)
	return m
}
