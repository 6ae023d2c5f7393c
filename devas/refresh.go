package devas

import (
	"crypto/subtle"
	"errors"
	"strings"
	"sync"
	"time"
)

// Refresh tokens are "<family>.<secret>": the family id (newJTI, 22
// characters) says which family a presented token claims to belong to, and
// the store keeps, per family, the grant and the hash of the one token that
// is live. So:
//
//   - rotation replaces the live hash in place: refreshing never needs a
//     new entry, cannot fail for lack of room, and a flood of refreshes by
//     one client cannot crowd out anybody else;
//   - every earlier token of a family, however old, is recognised as a
//     spent one (its family matches, its hash does not), and presenting it
//     revokes the family (OAuth 2.1 §4.3.1). No tombstones are kept;
//   - only a code exchange creates an entry, and entries expire
//     RefreshTokenTTL after the last rotation.
//
// A family revoked before its entry exists (an authorization code replay
// racing the exchange that creates it) is remembered in a revoked set until
// it could no longer matter, so that the creation then fails.

// refreshFamily is the state of one refresh token family.
type refreshFamily struct {
	grant
	// Current is hashKey of the one live refresh token.
	Current string
}

var (
	// errRevoked: the family was revoked.
	errRevoked = errors.New("devas: refresh token family revoked")
	// errNotCurrent: the token presented is not the family's live one
	// (spent, or another request rotated it first).
	errNotCurrent = errors.New("devas: refresh token not current")
	// errUnknownFamily: no such family, or it expired.
	errUnknownFamily = errors.New("devas: unknown refresh token family")
)

const familyLen = 22 // len(newJTI())

// newRefreshToken returns a new token of family.
func newRefreshToken(family string) string { return family + "." + randomToken() }

// refreshTokenFamily returns the family a presented refresh token names.
func refreshTokenFamily(rt string) (string, bool) {
	family, secret, ok := strings.Cut(rt, ".")
	if !ok || len(family) != familyLen || secret == "" {
		return "", false
	}
	for i := 0; i < len(family); i++ {
		if c := family[i]; !isUnreserved(c) || c == '.' || c == '~' {
			return "", false
		}
	}
	return family, true
}

// refreshStore holds refresh token families and the revoked set under one
// lock, so that revoking and creating a family cannot interleave. At most
// max families and maxRevoked revoked ids are kept.
type refreshStore struct {
	mu         sync.Mutex
	max        int
	maxRevoked int
	fams       map[string]entry[refreshFamily]
	revoked    map[string]time.Time // family -> forget after
}

func newRefreshStore(max, maxRevoked int) *refreshStore {
	return &refreshStore{
		max:        max,
		maxRevoked: maxRevoked,
		fams:       make(map[string]entry[refreshFamily]),
		revoked:    make(map[string]time.Time),
	}
}

// isRevoked reports whether family is in the unexpired revoked set. The
// caller holds the lock.
func (s *refreshStore) isRevoked(family string, now time.Time) bool {
	until, ok := s.revoked[family]
	if ok && !now.Before(until) {
		delete(s.revoked, family)
		return false
	}
	return ok
}

// create adds a family whose live token hashes to current, until exp. It
// fails with errRevoked when the family was revoked first, and with
// errStoreFull when max unexpired families exist.
func (s *refreshStore) create(family string, g grant, current string, exp, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isRevoked(family, now) {
		return errRevoked
	}
	if _, ok := s.fams[family]; !ok && len(s.fams) >= s.max {
		for k, e := range s.fams {
			if !now.Before(e.exp) {
				delete(s.fams, k)
			}
		}
		if len(s.fams) >= s.max {
			return errStoreFull
		}
	}
	s.fams[family] = entry[refreshFamily]{refreshFamily{grant: g, Current: current}, exp}
	return nil
}

// get returns the unexpired, unrevoked family.
func (s *refreshStore) get(family string, now time.Time) (refreshFamily, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.fams[family]
	switch {
	case !ok:
		return refreshFamily{}, false
	case !now.Before(e.exp) || s.isRevoked(family, now):
		delete(s.fams, family)
		return refreshFamily{}, false
	}
	return e.v, true
}

// rotate replaces the family's live token, which must still hash to old,
// by one hashing to current, valid until exp. It fails with
// errUnknownFamily (expired, revoked or never issued) or errNotCurrent.
func (s *refreshStore) rotate(family, old, current string, exp, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.fams[family]
	switch {
	case !ok:
		return errUnknownFamily
	case !now.Before(e.exp) || s.isRevoked(family, now):
		delete(s.fams, family)
		return errUnknownFamily
	case subtle.ConstantTimeCompare([]byte(e.v.Current), []byte(old)) != 1:
		return errNotCurrent
	}
	e.v.Current, e.exp = current, exp
	s.fams[family] = e
	return nil
}

// revoke deletes the family. A family not (or no longer) in the store is
// remembered as revoked until until, so that creating it later fails:
// that is the case of a code replay that wins the race against the
// exchange creating the family. A family that was created is simply gone,
// since its id is never created again. When the revoked set is full, the
// entry closest to expiry is forgotten first.
func (s *refreshStore) revoke(family string, until, now time.Time) {
	if family == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fams[family]; ok {
		delete(s.fams, family)
		return
	}
	if _, ok := s.revoked[family]; !ok && len(s.revoked) >= s.maxRevoked {
		oldest, first := "", time.Time{}
		for k, t := range s.revoked {
			if !now.Before(t) {
				delete(s.revoked, k)
			} else if oldest == "" || t.Before(first) {
				oldest, first = k, t
			}
		}
		if len(s.revoked) >= s.maxRevoked {
			delete(s.revoked, oldest)
		}
	}
	s.revoked[family] = until
}

// len returns the number of families and revoked ids, expired or not.
func (s *refreshStore) len() (families, revoked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fams), len(s.revoked)
}
