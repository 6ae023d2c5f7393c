package fetch

import (
	"context"
	"fmt"
	"io"
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
	req.Header.Set("Accept", "application/json")
	nc := *c
	nc.CheckRedirect = redirectFunc(NoRedirects)
	resp, err := nc.Do(req)
	if err != nil {
		return nil, transportErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, &StatusError{Code: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if ct := resp.Header.Get("Content-Type"); !IsJSONMediaType(ct) {
		if len(ct) > 64 {
			ct = ct[:64]
		}
		return nil, fmt.Errorf("%w: %q", ErrContentType, ct)
	}
	body, err := ReadBounded(resp.Body, maxBytes)
	if err != nil {
		return nil, err
	}
	return &Response{Body: body, Header: resp.Header}, nil
}
