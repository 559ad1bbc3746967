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

package apiserversource

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"knative.dev/eventing/pkg/reconciler/apiserversource/resources"
)

// The files that ../../../UPSTREAM lists are eventing's, unchanged: only
// serverless.go, this test, the command, the rest of config/ and the e2e
// were added.
func TestTheFilesAreEventingsUnchanged(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "knative.dev/eventing").Output()
	if err != nil {
		t.Fatal("go mod download knative.dev/eventing:", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: %v (%s)", err, out)
	}
	root := filepath.Join("..", "..", "..")
	list, err := os.ReadFile(filepath.Join(root, "UPSTREAM"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(list), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		theirs, err := os.ReadFile(filepath.Join(mod.Dir, f[1]))
		if err != nil {
			t.Fatal(err)
		}
		ours, err := os.ReadFile(filepath.Join(root, f[0]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s differs from eventing's %s", f[0], f[1])
		}
		n++
	}
	if n != 8 {
		t.Errorf("UPSTREAM lists %d files, want the 6 of the reconciler and the 2 CRDs", n)
	}
	if got := resources.Labels("x")[ownerLabel]; got != "x" {
		t.Errorf("resources.Labels puts %q in %s, want the ApiServerSource's name", got, ownerLabel)
	}
}
