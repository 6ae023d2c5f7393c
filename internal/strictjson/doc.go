// Package strictjson is mcpguard's one reader of untrusted JSON: JOSE
// headers and JWT claims sets (validate), DPoP proofs (validate/dpop),
// introspection responses and OAuth error answers (validate/introspect),
// JSON-RPC bodies (middleware), client metadata and registration requests
// (cimd), authorization-server metadata (asmeta), token-endpoint answers
// and protected-resource metadata (client), and the answers of audited
// servers (cmd/internal/audit). prm, a standard-library leaf, applies the
// same policy with its own checker on encoding/json's tokenizer, held to
// this package by a differential fuzz target. TestOneJSONReader fails the
// build when another file decodes JSON without this package (its
// documented exceptions: docs/jose.md). It is a thin policy layer over
// github.com/go-json-experiment/json and its jsontext tokenizer, the
// module form of Go 1.27's encoding/json/v2; no byte of JSON is scanned by
// code of this module. When the minimum Go version is 1.27, the imports
// become encoding/json/v2 and encoding/json/jsontext and nothing else
// changes.
//
// # The strictness policy
//
// Every document read through this package is refused unless:
//
//  1. it is exactly one JSON value (RFC 8259 §2), with nothing after it
//     but whitespace, nested at most 10000 levels (jsontext's bound) —
//     [ErrSyntax];
//  2. it is valid UTF-8 (RFC 8259 §8.1), also inside escapes: a lone
//     surrogate such as "\ud800" is refused — [ErrInvalidUTF8];
//  3. no object, at any depth, has two members with the same name after
//     unescaping (RFC 8259 §4 leaves their meaning to the parser; RFC 7515
//     §4, RFC 7519 §4 and RFC 7493 §2.3 let or make a parser refuse them)
//     — [ErrDuplicateName];
//  4. in an object whose members this module reads ([Members]), no
//     member name is a case variant of a name the reader reads (equal to
//     it under Unicode simple case folding, [strings.EqualFold], but not
//     byte for byte: "Sub", "ſub" or "SUB" when "sub" is read), and no two
//     member names are equal under that folding, whether read or not —
//     [ErrCaseVariant]. So no decoder that matches names case-insensitively
//     (encoding/json v1 and others) can see a member this module did not
//     check.
//
// Names are matched exactly (case-sensitively) by every reader, and
// [Unmarshal], for whole documents handed to callers (Claims.Decode),
// uses go-json-experiment/json's defaults, which apply rules 1 to 3 and
// match struct fields case-sensitively.
//
// The policy is the same for every caller; callers only choose which of
// their own sentinel errors each class maps to.
package strictjson
