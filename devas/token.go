package devas

import "github.com/mcpguard/mcpguard/internal/devtoken"

// grant is what an access token (and a refresh token) is issued for; the
// signer (internal/devtoken, shared with internal/devmint) signs it.
type grant = devtoken.Grant
