package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// PostForm sends form as an application/x-www-form-urlencoded POST to
// rawURL, with header added (for client authentication), accepting JSON,
// and returns the body read up to maxBytes after decompression. It applies
// the checks of [Get]: rawURL must pass [CheckURL] with loopback http
// allowed (otherwise nothing is sent), the status must be 200 (else a
// [StatusError]) and the media type JSON (else [ErrContentType]).
//
// PostForm never follows a redirect, whatever c's policy: a 307 or 308
// would resend the form, credentials included, to another URL. It uses a
// shallow copy of c whose CheckRedirect refuses every redirect, so the 3xx
// response becomes a StatusError. The caller's client supplies the
// deadline and dial guard; ctx may shorten the deadline.
func PostForm(ctx context.Context, c *http.Client, rawURL string, form url.Values, header http.Header, maxBytes int64) (*Response, error) {
	if _, err := CheckURL(rawURL, true); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInsecureURL, err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	nc := *c
	nc.CheckRedirect = redirectFunc(NoRedirects)
	return do(&nc, req, maxBytes)
}
