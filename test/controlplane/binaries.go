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
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// modulePath is the module whose root holds hack/build-tools.sh.
const modulePath = "github.com/frugal-operator/foo-operator"

// BinaryPath returns the path of a binary that hack/build-tools.sh builds
// (etcd, kube-apiserver, kube-controller-manager, kubectl or adapter), as the
// script's --path prints it, or an error saying how to build it.
func BinaryPath(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "build-tools.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script, "--path", name)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("failed to get the path of %s from %s: %w: %s", name, script, err, strings.TrimSpace(stderr.String()))
	}
	path := strings.TrimSpace(string(out))
	info, err := os.Stat(path)
	if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not built at %s: run hack/build-tools.sh %s", name, path, name)
	}
	return path, nil
}

// RepoRoot returns the directory that holds this module's go.mod, found by
// walking up from the working directory and, failing that, from this
// package's source directory.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if isModuleRoot(dir) {
				return dir, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("failed to find the root of module " + modulePath + " above the working directory")
}

// isModuleRoot reports whether dir holds the go.mod of this module rather
// than that of another one, such as the tools modules under hack/tools.
func isModuleRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}
