package proxy

import (
	"errors"
	"sync"
)

// userStreamsRetryAfter is the Retry-After, in seconds, of a refusal for
// too many streams: a slot frees when one of the user's streams ends.
const userStreamsRetryAfter = "5"

// errUserStreams: the user holds the route's maximum of open streams (429).
var errUserStreams = errors.New("proxy: too many open streams for the user")

// userStreams counts the open SSE streams of each user of a route, keyed
// by the user (middleware.Principal.UserID), never by the client.
type userStreams struct {
	max int

	mu   sync.Mutex
	open map[string]int
}

func newUserStreams(max int) *userStreams {
	return &userStreams{max: max, open: map[string]int{}}
}

// acquire takes a slot of user's, or reports false when all are taken.
func (u *userStreams) acquire(user string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.open[user] >= u.max {
		return false
	}
	u.open[user]++
	return true
}

// release gives back a slot acquire took.
func (u *userStreams) release(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if n := u.open[user] - 1; n > 0 {
		u.open[user] = n
	} else {
		delete(u.open, user)
	}
}
