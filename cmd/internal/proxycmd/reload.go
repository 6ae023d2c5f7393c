package proxycmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/proxy"
	"github.com/mcpguard/mcpguard/validate/dpop"
)

// retireAfter is how long a replaced proxy keeps its key sources and
// connections for the requests it is still serving; its open answers
// (streams above all) go on after it until they end.
const retireAfter = 30 * time.Second

// generations serves the current proxy, built from the configuration
// file, and replaces it atomically on a reload: requests that started on
// the previous one finish there, new ones go to the new one. Without
// Redis, every generation shares one step-up store, one session-owner
// store, one DPoP replay store and one pin store, so that sessions,
// step-up counts, replay records and pinned tools survive a reload (a
// reload must never re-pin a changed tool).
type generations struct {
	cur atomic.Pointer[proxy.Proxy]

	path     string
	getenv   func(string) string
	waitKeys time.Duration
	log      *slog.Logger
	prepare  func(*proxy.Config) // logger, telemetry
	first    proxy.Config        // its tls and dev_as need a restart to change

	stepUp  middleware.StepUpStore
	owners  middleware.OwnerStore
	replays dpop.ReplayStore
	pins    middleware.PinStore

	mu      sync.Mutex // one reload at a time; guards the fields below
	retired []*proxy.Proxy
	loaded  []byte // the file's content of the current generation
}

func (g *generations) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.cur.Load().ServeHTTP(w, r)
}

// share gives cfg the stores every generation shares, unless it uses
// Redis (whose stores every generation and replica share anyway).
func (g *generations) share(cfg *proxy.Config) {
	if cfg.Redis.Addr != "" {
		return
	}
	if g.stepUp == nil {
		g.stepUp = middleware.NewMemoryStepUpStore()
		g.owners = middleware.NewMemoryOwnerStore(nil)
		g.replays = dpop.NewMemoryReplayStore(0, nil)
		g.pins = middleware.NewMemoryPinStore()
	}
	cfg.StepUpStore, cfg.OwnerStore, cfg.ReplayStore, cfg.PinStore = g.stepUp, g.owners, g.replays, g.pins
}

// readFile reads the configuration file, bounded.
func (g *generations) readFile() ([]byte, error) {
	fi, err := os.Stat(g.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", proxy.ErrConfig, err)
	}
	if fi.Size() > maxConfigBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", proxy.ErrConfig, g.path, maxConfigBytes)
	}
	return os.ReadFile(g.path)
}

// reload re-reads and checks the file and, if it is valid and its keys
// load within waitKeys, makes it the current generation. Otherwise the
// running configuration stays and the reason is logged and returned.
func (g *generations) reload(ctx context.Context, why string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.reloadLocked(ctx)
	if err != nil {
		g.log.Error("configuration reload refused; the running configuration stays", "trigger", why, "file", g.path, "error", err.Error())
		return err
	}
	g.log.Info("configuration reloaded", "trigger", why, "file", g.path)
	return nil
}

func (g *generations) reloadLocked(ctx context.Context) error {
	b, err := g.readFile()
	if err != nil {
		return err
	}
	cfg, err := proxy.Parse(g.path, b, g.getenv)
	if err != nil {
		return err
	}
	if cfg.TLS != g.first.TLS {
		return errors.New("tls: changing the certificate files needs a restart (their content is re-read on its own)")
	}
	if cfg.DevAS != g.first.DevAS {
		return errors.New("dev_as: changing it needs a restart")
	}
	g.prepare(&cfg)
	g.share(&cfg)
	px, err := proxy.New(cfg)
	if err != nil {
		return err
	}
	if g.waitKeys > 0 {
		wctx, cancel := context.WithTimeout(ctx, g.waitKeys)
		err := px.WaitReady(wctx)
		cancel()
		if err != nil {
			_ = px.Close()
			return err
		}
	}
	old := g.cur.Swap(px)
	g.loaded = b
	// Forget the retired generations whose answers have all ended.
	keep := g.retired[:0]
	for _, r := range g.retired {
		if r.OpenAnswers() > 0 {
			keep = append(keep, r)
		}
	}
	g.retired = append(keep, old)
	time.AfterFunc(retireAfter, func() { _ = old.Close() })
	return nil
}

// watch reloads when the file's content changes, checking every interval,
// until ctx ends.
func (g *generations) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := g.readFile()
		g.mu.Lock()
		changed := err == nil && !bytes.Equal(b, g.loaded)
		if changed {
			g.loaded = b // a refused version is not tried again until it changes
		}
		g.mu.Unlock()
		if changed {
			_ = g.reload(ctx, "file changed")
		}
	}
}

// all returns the current generation and the retired ones still serving.
func (g *generations) all() []*proxy.Proxy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*proxy.Proxy{g.cur.Load()}, g.retired...)
}
