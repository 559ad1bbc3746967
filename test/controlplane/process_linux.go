/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controlplane

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks the kernel to SIGKILL the child when the thread that
// started it exits, so that a test binary that dies leaves no control plane
// behind, and puts the child in its own process group so that a terminal's
// Ctrl-C reaches the test binary, which then stops the children in order.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	cmd.SysProcAttr.Setpgid = true
}
