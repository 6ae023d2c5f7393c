package devas

import (
	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/devtoken"
)

// The names the external tests of this package use, out of the public
// surface since issue #26 (the module's other code mints with
// internal/devmint).
const (
	DefaultSubject = defaultSubject
	DefaultTenant  = defaultTenant
)

var (
	ErrUnknownResource = devtoken.ErrUnknownResource
	ErrInvalidArgument = devtoken.ErrInvalidArgument
)

func (s *Server) IssueToken(subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.tokens.IssueToken(subject, tenant, clientID, resource, scopes)
}

func (s *Server) IssueBoundToken(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.tokens.IssueBoundToken(jkt, subject, tenant, clientID, resource, scopes)
}

func (s *Server) Metadata() asmeta.Metadata { return s.metadata() }
