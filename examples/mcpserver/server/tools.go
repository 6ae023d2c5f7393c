package server

import (
	"context"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpguard/mcpguard/middleware"
)

// Tool names and the scopes they need on top of Config.Scopes. The
// middleware enforces the scopes before a tool runs (a missing scope is an
// HTTP 403 insufficient_scope), so the handlers below never see a caller
// without them.
const (
	ToolWhoami     = "whoami"
	ToolNotesList  = "notes_list"
	ToolNotesWrite = "notes_write"

	ScopeNotesRead  = "notes:read"
	ScopeNotesWrite = "notes:write"
)

// toolScopes is the per-tool part of the operation policy.
func toolScopes() map[string][]string {
	return map[string][]string{
		ToolWhoami:     nil, // base scopes only
		ToolNotesList:  {ScopeNotesRead},
		ToolNotesWrite: {ScopeNotesWrite},
	}
}

// Tool errors are shown to the caller (isError: true); they are fixed
// texts that never echo arguments or internal errors.
var (
	errNoPrincipal    = errors.New("no authenticated principal")
	errNoTenant       = errors.New("the access token carries no tenant")
	errTenantMismatch = errors.New("tenant does not match the caller's tenant")
)

// WhoamiResult is the output of the whoami tool: the principal the
// middleware authenticated, from the verified access token.
type WhoamiResult struct {
	Subject  string   `json:"subject"`
	ClientID string   `json:"client_id"`
	Tenant   string   `json:"tenant"`
	Scopes   []string `json:"scopes"`
	// Anonymous is true for a request served without a token (a public
	// operation); every other field is then empty.
	Anonymous bool `json:"anonymous,omitempty"`
}

// NotesListArgs are the arguments of notes_list.
type NotesListArgs struct {
	Tenant string `json:"tenant,omitempty" jsonschema:"optional; must equal the caller's tenant, which is used when it is empty"`
}

// NotesListResult is the output of notes_list.
type NotesListResult struct {
	Tenant string `json:"tenant"`
	Notes  []Note `json:"notes"`
}

// NotesWriteArgs are the arguments of notes_write.
type NotesWriteArgs struct {
	Text string `json:"text" jsonschema:"the note text, at most 4096 bytes"`
}

// NotesWriteResult is the output of notes_write.
type NotesWriteResult struct {
	Tenant string `json:"tenant"`
	Note   Note   `json:"note"`
}

// addTools registers the three tools on srv.
func addTools(srv *mcp.Server, store *notes) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolWhoami,
		Description: "Returns the authenticated caller: subject, client_id, tenant and granted scopes.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, whoami)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolNotesList,
		Description: "Lists the notes of the caller's tenant. Needs the notes:read scope.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in NotesListArgs) (*mcp.CallToolResult, NotesListResult, error) {
		tenant, err := callerTenant(ctx, in.Tenant)
		if err != nil {
			return nil, NotesListResult{}, err
		}
		return nil, NotesListResult{Tenant: tenant, Notes: store.list(tenant)}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolNotesWrite,
		Description: "Stores a note for the caller's tenant. Needs the notes:write scope.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in NotesWriteArgs) (*mcp.CallToolResult, NotesWriteResult, error) {
		p, ok := middleware.PrincipalFromContext(ctx)
		if !ok {
			return nil, NotesWriteResult{}, errNoPrincipal
		}
		tenant, err := callerTenant(ctx, "")
		if err != nil {
			return nil, NotesWriteResult{}, err
		}
		n, err := store.add(tenant, p.Subject, in.Text)
		if err != nil {
			return nil, NotesWriteResult{}, err
		}
		return nil, NotesWriteResult{Tenant: tenant, Note: n}, nil
	})
}

func whoami(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, WhoamiResult, error) {
	p, ok := middleware.PrincipalFromContext(ctx)
	if !ok {
		return nil, WhoamiResult{}, errNoPrincipal
	}
	scopes := slices.Clone(p.Scopes)
	if scopes == nil {
		scopes = []string{}
	}
	return nil, WhoamiResult{Subject: p.Subject, ClientID: p.ClientID, Tenant: p.Tenant, Scopes: scopes, Anonymous: p.Anonymous}, nil
}

// callerTenant returns the tenant of the request's principal. The token is
// the only authority: argTenant, a value the client chose, may only repeat
// it (middleware.CheckTenant); it never selects another tenant's data.
func callerTenant(ctx context.Context, argTenant string) (string, error) {
	if err := middleware.CheckTenant(ctx, argTenant); err != nil {
		return "", publicTenantError(err)
	}
	tenant, err := middleware.TenantFromContext(ctx)
	if err != nil {
		return "", publicTenantError(err)
	}
	return tenant, nil
}

// publicTenantError maps middleware errors to the fixed texts shown to
// the caller.
func publicTenantError(err error) error {
	switch {
	case errors.Is(err, middleware.Error{Reason: "tenant_mismatch"}):
		return errTenantMismatch
	case errors.Is(err, middleware.Error{Reason: "no_tenant"}):
		return errNoTenant
	default:
		return errNoPrincipal
	}
}
