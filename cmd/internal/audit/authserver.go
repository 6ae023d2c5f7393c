package audit

import (
	"context"
	"crypto"
	"net/http"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/fetch"
	"github.com/mcpguard/mcpguard/internal/strictjson"
)

// maxAuthServers bounds the authorization servers checked.
const maxAuthServers = 3

// signingKey is a public key of the authorization server, used to aim
// forged tokens at the real key (kid) and as the HS256 secret.
type signingKey struct {
	kid string
	alg string
	pub crypto.PublicKey
}

// checkAuthorizationServers runs the AS-* checks for each authorization
// server of the metadata (at most maxAuthServers).
func (a *Auditor) checkAuthorizationServers(ctx context.Context) {
	if a.prm == nil || len(a.prm.AuthorizationServers) == 0 {
		for _, id := range []string{ASMetadata, ASIssuer, ASRFC8414, ASPKCE, ASCIMD, ASRegistration} {
			a.skip(id, "no authorization server known (no protected-resource metadata)")
		}
		return
	}
	servers := a.prm.AuthorizationServers
	if len(servers) > maxAuthServers {
		servers = servers[:maxAuthServers]
	}
	for i, iss := range servers {
		m := a.checkAuthorizationServer(ctx, iss)
		if i == 0 && m != nil {
			a.as = m
			a.asKey = a.fetchSigningKey(ctx, m.JWKSURI)
		}
	}
}

// checkAuthorizationServer fetches every well-known URL of issuer, in the
// MCP order, and judges the first document naming issuer.
func (a *Auditor) checkAuthorizationServer(ctx context.Context, issuer string) *asmeta.Metadata {
	if _, err := asmeta.WellKnownURLs(issuer); err != nil {
		a.fail(ASMetadata, "authorization server "+quote(issuer)+" is not a valid issuer identifier (https, no query or fragment)")
		return nil
	}
	chosen, chosenEv, evs := a.fetchASMetadata(ctx, issuer, true)
	if chosen == nil {
		urls, _ := asmeta.WellKnownURLs(issuer)
		a.fail(ASMetadata, "no metadata naming "+quote(issuer)+" at "+strings.Join(urls, ", "), evs...)
		return nil
	}
	a.pass(ASMetadata, "", chosenEv)
	if err := chosen.Validate(issuer); err != nil {
		a.fail(ASRFC8414, strings.TrimPrefix(err.Error(), "asmeta: "), chosenEv)
	} else {
		a.pass(ASRFC8414, "", chosenEv)
	}
	a.judge(ASPKCE, slices.Contains(chosen.CodeChallengeMethodsSupported, "S256"), "",
		"code_challenge_methods_supported lacks S256 (MCP clients refuse to proceed)", chosenEv)
	a.judge(ASCIMD, chosen.ClientIDMetadataDocumentSupported, "",
		"client_id_metadata_document_supported is not true", chosenEv)
	switch {
	case chosen.ClientIDMetadataDocumentSupported && chosen.RegistrationEndpoint != "":
		a.pass(ASRegistration, "CIMD and a registration_endpoint (dynamic registration is deprecated in 2026-07-28)", chosenEv)
	case chosen.ClientIDMetadataDocumentSupported:
		a.pass(ASRegistration, "CIMD", chosenEv)
	case chosen.RegistrationEndpoint != "":
		a.pass(ASRegistration, "dynamic registration only (deprecated in 2026-07-28)", chosenEv)
	default:
		a.fail(ASRegistration, "neither CIMD nor a registration_endpoint: clients must be pre-registered", chosenEv)
	}
	return chosen
}

// fetchASMetadata fetches the well-known URLs of issuer in the MCP order
// and returns the first document naming issuer, its evidence line, and
// every evidence line. With judge it records AS-METADATA (not strict
// JSON) and AS-ISSUER as it goes. Documents are kept in asDocs.
func (a *Auditor) fetchASMetadata(ctx context.Context, issuer string, judge bool) (*asmeta.Metadata, string, []string) {
	if m, ok := a.asDocs[issuer]; ok && m != nil && !judge {
		return m, "", nil
	}
	urls, err := asmeta.WellKnownURLs(issuer)
	if err != nil {
		return nil, "", nil
	}
	var chosen *asmeta.Metadata
	var chosenEv string
	var evs []string
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			continue
		}
		req.Header.Set("Accept", "application/json")
		x := a.do(ctx, req)
		ev := a.evidence(x)
		evs = append(evs, ev)
		if x.status != http.StatusOK || !fetch.IsJSONMediaType(x.header.Get("Content-Type")) || x.truncated || len(x.body) > fetch.MaxServerMetadataBytes {
			continue
		}
		var m asmeta.Metadata
		if err := strictjson.Unmarshal(x.body, &m); err != nil {
			if judge {
				a.fail(ASMetadata, u+": not strict JSON", ev)
			}
			continue
		}
		if m.Issuer != issuer {
			if judge {
				a.fail(ASIssuer, u+" names issuer "+a.quoteFrom(x, m.Issuer)+", want "+quote(issuer), ev)
			}
			continue
		}
		if judge {
			a.pass(ASIssuer, "", ev)
		}
		if chosen == nil {
			chosen, chosenEv = &m, ev
			if !judge {
				break
			}
		}
	}
	if chosen != nil {
		a.asDocs[issuer] = chosen
	}
	return chosen, chosenEv, evs
}

// fetchSigningKey returns the first public signing key of the JWK Set at
// jwksURI, or nil.
func (a *Auditor) fetchSigningKey(ctx context.Context, jwksURI string) *signingKey {
	if jwksURI == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURI, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "application/json")
	x := a.do(ctx, req)
	if x.status != http.StatusOK || x.truncated {
		return nil
	}
	var set jose.JSONWebKeySet
	if err := strictjson.Unmarshal(x.body, &set); err != nil {
		return nil
	}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() || !k.Valid() {
			continue
		}
		return &signingKey{kid: k.KeyID, alg: k.Algorithm, pub: k.Key}
	}
	return nil
}
