//go:build !linux

package stdiobridge

import "os/exec"

// pidNamespaces is false: PID namespaces are Linux's.
const pidNamespaces = false

func setPIDNamespace(*exec.Cmd) {}

// setParentDeath does nothing: a parent-death signal is Linux's.
func setParentDeath(*exec.Cmd) {}
