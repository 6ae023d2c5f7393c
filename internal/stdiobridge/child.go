package stdiobridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// child is one running server process and its pipes.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	log    *slog.Logger
	grace  time.Duration

	wmu sync.Mutex // one line at a time on stdin

	exited  chan struct{} // closed when the process is reaped
	waitErr error
	// stderrDone is closed when stderr is read to its end: stop waits
	// for it (up to the grace) before closing stderr, so that what a
	// child wrote there just before it exited (why it crashed) is logged.
	stderrDone chan struct{}

	stopOnce sync.Once
}

// startChild starts argv with exactly env in dir, in its own process
// group (and with pidns in a PID namespace of its own), its three
// standard streams pipes of the bridge's.
func startChild(argv []string, env []string, dir string, pidns bool, grace time.Duration, log *slog.Logger) (*child, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: env, Dir: dir, Stdin: inR, Stdout: outW, Stderr: errW}
	setProcessGroup(cmd)
	setParentDeath(cmd)
	if pidns {
		setPIDNamespace(cmd)
	}
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	closeAll(inR, outW, errW) // the child's ends
	c := &child{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, log: log, grace: grace, exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		// Whatever the group still holds (a server started by npx or a
		// shell script) goes with it.
		killGroup(cmd, true)
		close(c.exited)
	}()
	return c, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// write sends one line (msg and a newline) to the child's stdin, within
// timeout: a child that does not read its input is hung.
func (c *child) write(msg []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.stdin.SetWriteDeadline(time.Now().Add(timeout))
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err := c.stdin.Write(buf)
	return err
}

// stop ends the child: its stdin closed (the stdio transport's shutdown),
// then SIGTERM to its process group, then SIGKILL after the grace, and
// waits until it is reaped or ctx ends.
func (c *child) stop(ctx context.Context) {
	c.stopOnce.Do(func() {
		// Not under wmu: a write blocked on a child that does not read
		// (up to the request timeout, and more behind it) ends with the
		// close.
		_ = c.stdin.Close()
		select {
		case <-c.exited:
		default:
			killGroup(c.cmd, false)
			t := time.NewTimer(c.grace)
			select {
			case <-c.exited:
			case <-t.C:
				killGroup(c.cmd, true)
			case <-ctx.Done():
				killGroup(c.cmd, true)
			}
			t.Stop()
		}
	})
	select {
	case <-c.exited:
	case <-ctx.Done():
	}
	_ = c.stdout.Close()
	t := time.NewTimer(c.grace)
	select {
	case <-c.stderrDone:
	case <-t.C: // a descendant that left the group holds it
	case <-ctx.Done():
	}
	t.Stop()
	_ = c.stderr.Close()
}

// exitReason describes how the process ended, for the log.
func (c *child) exitReason() string {
	if c.waitErr == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		return ee.ProcessState.String()
	}
	return fmt.Sprintf("wait: %s", c.waitErr.Error())
}
