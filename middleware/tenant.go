package middleware

import "context"

// TenantFromContext returns the tenant of the request's principal (its
// token's tenant claim, validate.Config.TenantClaim). It returns
// an [Error] "no_principal" outside [Middleware.Handler], and "no_tenant"
// when the token carries no tenant.
func TenantFromContext(ctx context.Context) (string, error) {
	p, ok := PrincipalFromContext(ctx)
	if !ok {
		return "", errNoPrincipal
	}
	if p.Tenant == "" {
		return "", errNoTenant
	}
	return p.Tenant, nil
}

// CheckTenant checks a tenant the client supplied, typically a tool
// argument, against the principal's tenant. The token is the authority on
// tenancy: a client must never reach another tenant's data by naming it. An
// empty argTenant is allowed (the handler then uses the principal's
// tenant). Otherwise CheckTenant returns an [Error]: "no_principal"
// outside [Middleware.Handler], "no_tenant" if the token has no tenant,
// and "tenant_mismatch" if the two differ (compared byte for byte).
//
// A tool handler uses it like this:
//
//	func listInvoices(ctx context.Context, req *mcp.CallToolRequest, in Args) (*mcp.CallToolResult, Out, error) {
//		if err := middleware.CheckTenant(ctx, in.Tenant); err != nil {
//			return nil, Out{}, err // never serve another tenant
//		}
//		tenant, err := middleware.TenantFromContext(ctx)
//		if err != nil {
//			return nil, Out{}, err
//		}
//		return nil, queryInvoices(tenant), nil
//	}
func CheckTenant(ctx context.Context, argTenant string) error {
	p, ok := PrincipalFromContext(ctx)
	if !ok {
		return errNoPrincipal
	}
	if argTenant == "" {
		return nil
	}
	if p.Tenant == "" {
		return errNoTenant
	}
	if argTenant != p.Tenant {
		return errTenantMismatch
	}
	return nil
}
