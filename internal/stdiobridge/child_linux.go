//go:build linux

package stdiobridge

import (
	"os/exec"
	"syscall"
)

// pidNamespaces: a child can be started as the first process of a PID
// namespace of its own (Config.PIDNamespace).
const pidNamespaces = true

// setParentDeath has the kernel SIGKILL the child when the proxy dies
// without stopping it (SIGKILL, a crash), which would otherwise leave it
// running for good when it does not end at its stdin's EOF. The signal
// comes when the thread that started the child ends; Go ends a thread
// only when a goroutine locked to it (runtime.LockOSThread) returns, and
// the bridge starts children from goroutines that never lock one.
func setParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// setPIDNamespace starts cmd in a new PID namespace: when it ends, the
// kernel kills every process left in the namespace, however it left the
// process group (setsid, a double fork). It needs CAP_SYS_ADMIN.
func setPIDNamespace(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
}
