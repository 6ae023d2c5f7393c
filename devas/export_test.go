package devas

import (
	"github.com/mcpguard/mcpguard/asmeta"
	"github.com/mcpguard/mcpguard/internal/devmint"
)

// The names the external tests of this package use, out of the public
// surface since issue #26 (the module's other tests use internal/devmint).
const (
	DefaultSubject = defaultSubject
	DefaultTenant  = defaultTenant
)

var (
	ErrUnknownResource = devmint.ErrUnknownResource
	ErrInvalidArgument = devmint.ErrInvalidArgument
)

func (s *Server) IssueToken(subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return devmint.Of(s).IssueToken(subject, tenant, clientID, resource, scopes)
}

func (s *Server) IssueBoundToken(jkt, subject, tenant, clientID, resource string, scopes []string) (string, error) {
	return s.issueBoundToken(jkt, subject, tenant, clientID, resource, scopes)
}

func (s *Server) Metadata() asmeta.Metadata { return s.metadata() }
