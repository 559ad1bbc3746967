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

package localenv

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// Files returns the paths of files in dir, for Operator.Manifests.
func Files(dir string, files ...string) []string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = path.Join(dir, f)
	}
	return paths
}

// UpForTests brings op up for a package's tests, as their TestMain does:
// in a temporary folder, with the audit log on, within 5 minutes. Finish
// brings it down.
func UpForTests(op Operator) (*Env, error) {
	dir, err := os.MkdirTemp("", op.Name+"-e2e-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Up(ctx, op, Options{Dir: dir, Audit: true})
	if err != nil {
		return nil, fmt.Errorf("bringing %s up: %w (logs in %s)", op.Name, err, dir)
	}
	return e, nil
}

// Finish stops everything and returns code, the tests' exit code (1 if
// stopping failed). It removes the folder if the tests passed, else says
// where their logs are.
func (e *Env) Finish(code int) int {
	if err := e.Down(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping:", err)
		code = 1
	}
	if code == 0 {
		_ = os.RemoveAll(e.CP.Dir)
	} else {
		fmt.Fprintln(os.Stderr, "e2e: logs kept in", e.CP.Dir)
	}
	return code
}

// AdapterDrops counts the events the adapters gave up on (after about 3 s
// of retries), from their logs.
func (e *Env) AdapterDrops() int {
	n := 0
	for _, a := range e.Adapters {
		b, _ := os.ReadFile(a.LogPath)
		n += strings.Count(string(b), "failed to send cloudevent")
	}
	return n
}

// CheckLeastPrivilege fails t unless the reconciler, running as account of
// the operator's namespace with user agent agent, was refused nothing and
// used every rule that the ClusterRole and Role named account grant it, in
// configDir's 200-clusterroles.yaml and 200-roles.yaml (configDir from the
// repository's root). Run it
// last: the tests before must do all the reconciler does.
func (e *Env) CheckLeastPrivilege(t *testing.T, configDir, account, agent string) {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, configDir)
	files := []string{filepath.Join(dir, "200-clusterroles.yaml"), filepath.Join(dir, "200-roles.yaml")}
	user := "system:serviceaccount:" + e.Operator.Namespace + ":" + account
	clustertest.Eventually(t, time.Minute, "every granted rule used, and nothing else", func(context.Context) (bool, string) {
		u, err := e.CP.PrivilegeUse(files, account, user, agent)
		if err != nil {
			return false, err.Error()
		}
		return u.Least(), u.String()
	})
}
