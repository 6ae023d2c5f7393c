package dpop

import "github.com/mcpguard/mcpguard/internal/strictjson"

// The members of a proof this package reads, for rule 4 of the module's
// strictness policy (internal/strictjson): a case variant of one of them
// ("HTM", "Jti", "ſub"…), or two names equal under case folding, makes
// the object unreadable.
var (
	headerNames = []string{"typ", "alg", "jwk", "crit", "b64"}
	claimNames  = []string{"jti", "htm", "htu", "iat", "ath", "nonce"}
	jwkNames    = append([]string{"kty", "crv", "x", "y", "n", "e"}, privateMembers...)
)

// readJSON decodes one JSON object of a proof (its JOSE header, its claims
// set or its "jwk") into v. It is the only place this package reads JSON,
// and it reads by the module's one policy (internal/strictjson): exactly
// one object, valid UTF-8, no repeated member name at any depth, and no
// case variant of a name in names; then go-json-experiment/json decodes
// it with names matched case-sensitively, and a member of the wrong type
// is an error. Unknown members are allowed (RFC 9449 §4.2 lets proofs
// carry more claims).
func (ver *Verifier) readJSON(data []byte, names []string, v any) error {
	if err := ver.json.Members(data, names, func(_, _ []byte) error { return nil }); err != nil {
		return err
	}
	return strictjson.Unmarshal(data, v)
}
