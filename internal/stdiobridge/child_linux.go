//go:build linux

package stdiobridge

import (
	"os/exec"
	"syscall"
)

// pidNamespaces: a child can be started as the first process of a PID
// namespace of its own (Config.PIDNamespace).
const pidNamespaces = true

// setPIDNamespace starts cmd in a new PID namespace: when it ends, the
// kernel kills every process left in the namespace, however it left the
// process group (setsid, a double fork). It needs CAP_SYS_ADMIN.
func setPIDNamespace(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
}
