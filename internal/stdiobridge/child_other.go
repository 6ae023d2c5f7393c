//go:build !unix

package stdiobridge

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// supported is false: stdio upstreams need process groups (unix).
const supported = false
